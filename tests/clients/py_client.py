#!/usr/bin/env python3
"""py_client.py - a client driver on the official Python SDK (`mcp` 2.x, `mcp.Client`) for
Switchboard's tests. It connects to one MCP server, runs the steps it is given in order, and
prints ONE JSON object (the transcript) on stdout.

Usage:
  py_client.py --mode MODE [options] --url URL [--header 'Name: value']...
  py_client.py --mode MODE [options] --command CMD [--args ARG...]   (--args takes the rest)

  --mode legacy|auto|2026-07-28   the SDK's `Client(mode=...)`: initialize only, probe
                                  server/discover then fall back, or 2026-07-28 only
  --steps STEP,STEP,...           default "list"; each step is one of
      list                        tools/list: the tool names
      call:NAME                   tools/call NAME with the arguments of --tool-args NAME
      resources                   resources/list: the resource URIs
      templates                   resources/templates/list: the URI templates
      read:URI                    resources/read URI
      prompts                     prompts/list: the prompt names
      prompt:NAME                 prompts/get NAME with the arguments of --prompt-args NAME
      complete:PROMPT:ARG:VALUE   completion/complete of argument ARG of prompt PROMPT
  --tool-args NAME=JSON           arguments of call:NAME (repeatable; default {})
  --prompt-args NAME=JSON         arguments of prompt:NAME (repeatable; default {})
  --elicit JSON                   declare elicitation (form and URL) and accept every request,
                                  a form one with JSON
  --roots URI,URI,...             declare roots and answer roots/list with these
  --sample TEXT                   declare sampling and answer every request with TEXT
  --log-level LEVEL               log level asked for (default debug): `_meta` logLevel on
                                  2026-07-28, logging/setLevel on legacy connections
  --timeout SECONDS               bound of the whole run (default 30)

Nothing is ever raised past main: a failed step records {"error": {"code", "message"}} and the
run goes on; a failed connection records the top-level "error".
"""

import argparse
import json
import os
import sys
import warnings
from typing import Any

import anyio
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

import mcp.types as types
from mcp import Client, MCPDeprecationWarning, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Runs a fixed MCP scenario with the Python SDK.")
    parser.add_argument("--mode", required=True, choices=["legacy", "auto", *MODERN_PROTOCOL_VERSIONS])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url")
    target.add_argument("--command")
    parser.add_argument("--args", nargs=argparse.REMAINDER, default=[])
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--steps", default="list")
    parser.add_argument("--tool-args", action="append", default=[])
    parser.add_argument("--prompt-args", action="append", default=[])
    parser.add_argument("--elicit")
    parser.add_argument("--sample")
    parser.add_argument("--roots")
    parser.add_argument("--log-level", default="debug")
    parser.add_argument("--timeout", type=float, default=30.0)
    return parser.parse_args(argv)


def named_json(pairs: list[str]) -> dict[str, Any]:
    """Parses repeated NAME=JSON flags into a dict of NAME to parsed JSON."""
    named = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        named[name] = json.loads(value)
    return named


def error_of(exc: BaseException) -> dict[str, Any]:
    """The transcript form of an exception: its JSON-RPC code when it has one."""
    if isinstance(exc, MCPError):
        return {"code": exc.error.code, "message": exc.error.message}
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return error_of(exc.exceptions[0])
    return {"code": None, "message": f"{type(exc).__name__}: {exc}"}


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Recorder:
    """Collects what the server sends the client; each step takes what arrived during it."""

    def __init__(self) -> None:
        self.progress: list[dict[str, Any]] = []
        self.logs: list[dict[str, Any]] = []
        self.elicitations: list[dict[str, Any]] = []
        self.samplings: list[dict[str, Any]] = []

    def marks(self) -> tuple[int, int, int, int]:
        return len(self.progress), len(self.logs), len(self.elicitations), len(self.samplings)

    def since(self, marks: tuple[int, int, int, int]) -> dict[str, Any]:
        lists = (self.progress, self.logs, self.elicitations, self.samplings)
        names = ("progress", "logs", "elicitations", "samplings")
        return {name: items[mark:] for name, items, mark in zip(names, lists, marks)}

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append({"progress": progress, "total": total, "message": message})

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append({"level": params.level, "logger": params.logger, "data": params.data})


def client_for(options: argparse.Namespace, recorder: Recorder) -> Client:
    if options.url is not None:
        headers = dict(header.split(":", 1) for header in options.header)
        headers = {name.strip(): value.strip() for name, value in headers.items()}
        http = create_mcp_http_client(headers=headers)
        server: Any = streamable_http_client(options.url, http_client=http)
    else:
        server = StdioServerParameters(command=options.command, args=options.args, env=dict(os.environ))

    elicit_callback = None
    if options.elicit is not None:
        content = json.loads(options.elicit)

        async def elicit_callback(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            recorder.elicitations.append(dump(params))
            if isinstance(params, types.ElicitRequestURLParams):
                return types.ElicitResult(action="accept")
            return types.ElicitResult(action="accept", content=content)

    sample_callback = None
    if options.sample is not None:
        text = options.sample

        async def sample_callback(_context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
            recorder.samplings.append(dump(params))
            return types.CreateMessageResult(
                role="assistant",
                content=types.TextContent(type="text", text=text),
                model="fixed",
                stop_reason="endTurn",
            )

    roots_callback = None
    if options.roots is not None:
        roots = [types.Root(uri=uri, name=uri.rsplit("/", 1)[-1]) for uri in options.roots.split(",")]

        async def roots_callback(_context: Any) -> types.ListRootsResult:
            return types.ListRootsResult(roots=roots)

    return Client(
        server,
        mode=options.mode,
        elicitation_callback=elicit_callback,
        sampling_callback=sample_callback,
        list_roots_callback=roots_callback,
        logging_callback=recorder.on_log,
        log_level=options.log_level,
        client_info=types.Implementation(name="switchboard-test-py-client", version="1.0.0"),
    )


async def run_step(
    client: Client, step: str, options: argparse.Namespace, recorder: Recorder
) -> dict[str, Any]:
    kind, _, rest = step.partition(":")
    if kind == "list":
        tools = await client.list_tools()
        return {"tools": [tool.name for tool in tools.tools]}
    if kind == "call":
        arguments = named_json(options.tool_args).get(rest, {})
        result = await client.call_tool(rest, arguments, progress_callback=recorder.on_progress)
        return {
            "content": [dump(block) for block in result.content],
            "structuredContent": result.structured_content,
            "isError": bool(result.is_error),
        }
    if kind == "resources":
        resources = await client.list_resources()
        return {"resources": [str(resource.uri) for resource in resources.resources]}
    if kind == "templates":
        templates = await client.list_resource_templates()
        return {"templates": [template.uri_template for template in templates.resource_templates]}
    if kind == "read":
        result = await client.read_resource(rest)
        return {"contents": [dump(content) for content in result.contents]}
    if kind == "prompts":
        prompts = await client.list_prompts()
        return {"prompts": [prompt.name for prompt in prompts.prompts]}
    if kind == "prompt":
        arguments = named_json(options.prompt_args).get(rest, {})
        result = await client.get_prompt(rest, arguments)
        return {"messages": [dump(message) for message in result.messages]}
    if kind == "complete":
        prompt, argument, value = rest.split(":", 2)
        reference = types.PromptReference(type="ref/prompt", name=prompt)
        result = await client.complete(reference, {"name": argument, "value": value})
        return {"values": result.completion.values}
    raise ValueError(f"unknown step {step!r}")


async def run(options: argparse.Namespace, transcript: dict[str, Any]) -> None:
    recorder = Recorder()
    async with client_for(options, recorder) as client:
        version = client.protocol_version
        transcript["protocolVersion"] = version
        transcript["era"] = "modern" if version in MODERN_PROTOCOL_VERSIONS else "legacy"
        info = client.server_info
        transcript["serverInfo"] = None if info is None else {"name": info.name, "version": info.version}
        if transcript["era"] == "legacy" and client.server_capabilities.logging is not None:
            with warnings.catch_warnings(category=MCPDeprecationWarning, action="ignore"):
                await client.set_logging_level(options.log_level)
        for step in options.steps.split(","):
            record: dict[str, Any] = {"step": step}
            marks = recorder.marks()
            try:
                record.update(await run_step(client, step, options, recorder))
            except Exception as exc:
                record["error"] = error_of(exc)
            record.update(recorder.since(marks))
            transcript["steps"].append(record)


def main() -> None:
    options = parse_args(sys.argv[1:])
    transcript: dict[str, Any] = {
        "client": "py",
        "mode": options.mode,
        "era": None,
        "protocolVersion": None,
        "serverInfo": None,
        "steps": [],
        "error": None,
    }

    async def bounded() -> None:
        with anyio.fail_after(options.timeout):
            await run(options, transcript)

    try:
        anyio.run(bounded)
    except BaseException as exc:
        transcript["error"] = error_of(exc)
    print(json.dumps(transcript), flush=True)


if __name__ == "__main__":
    main()
