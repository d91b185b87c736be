#!/usr/bin/env python3
"""sdk_server.py - an MCP server over stdio built on the official Python SDK (`mcp` 2.x,
`MCPServer`), used by Switchboard's tests as a backend that speaks both protocol eras.

The SDK fixes the era of the connection from its first request: `initialize` gives a legacy
(2025-11-25 and before) session; a request whose `_meta` carries
`io.modelcontextprotocol/protocolVersion` (2026-07-28) gives a modern, stateless connection.

Tools:
  echo {text}              -> one text block: `text`, unchanged
  add {a, b}               -> structured output {"sum": a + b} (the tool has an outputSchema),
                              plus the same object as JSON text
  ask_name {}              -> asks the client for a form {name: string, age: integer} through
                              elicitation (a real `elicitation/create` request on legacy
                              connections, `resultType: "input_required"` on modern ones) and
                              answers "hello <name>, <age>"; "declined" or "cancelled" when the
                              client does not accept
  ask_llm {prompt}         -> asks the client to sample one message for `prompt` (a real
                              `sampling/createMessage` on legacy connections, input_required on
                              modern ones) and answers "sampled: <the text it got>"
  work {steps}             -> sends `steps` progress notifications (progress 1..steps, total
                              steps; only when the request has a progress token) and one log
                              message "working on <steps> steps" at level info (modern clients
                              get it only when their request carries a log level), then answers
                              "done <steps>"
Resource: fixture://greeting (text/plain) -> "hello from the fixture"
Prompt:   greet {name} -> one user message "Say hello to <name>."; `name` completes from
          "alice", "bob", "carol" by prefix (completion/complete)
"""

from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
)

server = MCPServer("sdk-fixture", version="1.0.0")

NAMES = ["alice", "bob", "carol"]


class Person(BaseModel):
    name: str
    age: int


class Sum(BaseModel):
    sum: int


@server.tool()
def echo(text: str) -> str:
    """Answers with the given text."""
    return text


@server.tool()
def add(a: int, b: int) -> Sum:
    """Adds two integers; the result is structured."""
    return Sum(sum=a + b)


def ask_person() -> Elicit[Person]:
    return Elicit("Who are you?", Person)


@server.tool()
def ask_name(answer: Annotated[ElicitationResult[Person], Resolve(ask_person)]) -> str:
    """Asks the user for a name and an age, and greets them."""
    if isinstance(answer, AcceptedElicitation):
        return f"hello {answer.data.name}, {answer.data.age}"
    return "declined" if answer.action == "decline" else "cancelled"


def sample_prompt(prompt: str) -> Sample:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    return Sample([message], max_tokens=50)


@server.tool()
def ask_llm(prompt: str, sampled: Annotated[CreateMessageResult, Resolve(sample_prompt)]) -> str:
    """Asks the client's model to answer a prompt."""
    content = sampled.content
    text = content.text if isinstance(content, TextContent) else content.type
    return f"sampled: {text}"


@server.tool()
async def work(steps: int, ctx: Context) -> str:
    """Reports progress once per step and logs one message."""
    await ctx.info(f"working on {steps} steps")
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"done {steps}"


@server.resource("fixture://greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed greeting."""
    return "hello from the fixture"


@server.prompt()
def greet(name: str) -> list[UserMessage]:
    """Asks the model to greet someone."""
    return [UserMessage(f"Say hello to {name}.")]


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "name":
        return Completion(values=[name for name in NAMES if name.startswith(argument.value)])
    return None


if __name__ == "__main__":
    server.run("stdio")
