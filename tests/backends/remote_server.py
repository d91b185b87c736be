#!/usr/bin/env python3
"""remote_server.py - a remote MCP server over HTTP on the official Python SDK (`mcp` 2.x,
`MCPServer`), used by Switchboard's tests as a backend it reaches by URL, optionally an OAuth
protected resource of tests/auth/oidc_server.mjs.

    remote_server.py [--port N] [--transport streamable|sse] [--stateless] [--resumable]
                     [--auth ISSUER --introspection-client ID --introspection-secret SECRET]
                     [--garbage html|hang] [--require-header NAME=VALUE]

It listens on 127.0.0.1 (`--port 0`, the default, takes any free port) and, once it does,
prints exactly one line on stdout, the URL to connect to, and nothing else there:
    {"url": "http://127.0.0.1:PORT/mcp"}    (Streamable HTTP, and the garbage modes)
    {"url": "http://127.0.0.1:PORT/sse"}    (--transport sse)
Logs go to stderr.

Transports:
  streamable (default)  Streamable HTTP at /mcp with sessions (`Mcp-Session-Id`) for the
                        handshake versions 2024-11-05, 2025-03-26, 2025-06-18 and 2025-11-25.
                        A request whose `MCP-Protocol-Version` header is 2026-07-28 is served
                        statelessly, one POST per request, without `initialize` or session.
  --stateless           Streamable HTTP without sessions, each POST answered with one JSON body.
  --resumable           Streamable HTTP whose streams can be resumed (SEP-1699): every event kept
                        in memory with an id, `retry: 100`, and the tool `pause`.
  sse                   the legacy HTTP+SSE transport of 2024-11-05: GET /sse opens the event
                        stream, whose `endpoint` event names POST /messages/?session_id=...

With --auth the server is an OAuth protected resource whose resource URL is the URL it prints.
It serves RFC 9728 protected resource metadata at /.well-known/oauth-protected-resource/mcp
(/sse for the SSE transport) naming ISSUER as its authorization server and `mcp:tools` as its
scope, and answers 401 with `WWW-Authenticate: Bearer ..., resource_metadata="<that URL>"` to a
request without a valid bearer token. Each token is checked by introspection (RFC 7662) at the
issuer's introspection endpoint, found in its RFC 8414 metadata, with the given client
credentials: it must be active and its audience (`aud`) must be the resource URL. A valid token
without the `mcp:tools` scope gets 403 `insufficient_scope`.

Tools:
  echo {text}   -> `text`, unchanged
  whoami {}     -> the token's subject (`sub`); "anonymous" without --auth
  slow {ms}     -> sleeps `ms` milliseconds, then answers "slept <ms>"
  sleeping {}   -> how many `slow` calls are sleeping now (a cancelled one stops)
  count {}      -> how many `tools/call` requests this process has received, this one included
  ask_name {}   -> asks the client for {name} (elicitation: a real `elicitation/create` on
                   a session, `input_required` for a 2026-07-28 request) and answers
                   "hello <name>"
  region {name} -> `name`, unchanged; the argument is marked `x-mcp-header: Region`, so a
                   2026-07-28 request must mirror it in `Mcp-Param-Region` (the SDK checks)

With --resumable:
  pause {ms}    -> closes its request's SSE stream before answering (a client of 2025-11-25 or
                   later reconnects with `Last-Event-ID`), sleeps `ms` milliseconds, then
                   answers "resumed after <ms> ms"

--garbage serves no MCP at all: every POST to /mcp answers 200 with a text/html page (`html`)
or never answers (`hang`).

--require-header NAME=VALUE answers 401 to every HTTP request (to /mcp, /sse, /messages/; the
/.well-known/ metadata excepted) whose header NAME is missing or is not VALUE, before anything
else looks at it, with a JSON body naming the header:
    {"error": "missing_header" | "wrong_header", "header": NAME, "message": "..."}
"""

import argparse
import json
import logging
import socket
import sys
from typing import Annotated, Any

import anyio
import httpx2
import uvicorn
from pydantic import BaseModel, Field
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

SCOPE = "mcp:tools"


class Person(BaseModel):
    name: str


def ask_person() -> Elicit[Person]:
    return Elicit("Who are you?", Person)


class IntrospectionVerifier:
    """Asks the authorization server about every bearer token (RFC 7662)."""

    def __init__(self, issuer: str, client_id: str, client_secret: str):
        # RFC 8414 metadata for an issuer without a path sits at the root.
        metadata = httpx2.get(f"{issuer}/.well-known/oauth-authorization-server").raise_for_status().json()
        self.endpoint = metadata["introspection_endpoint"]
        self.credentials = (client_id, client_secret)

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx2.AsyncClient() as http:
            response = await http.post(self.endpoint, data={"token": token}, auth=self.credentials)
        if response.status_code != 200:
            logging.warning("introspection answered %s: %s", response.status_code, response.text)
            return None
        claims = response.json()
        if not claims.get("active"):
            return None
        # `resource` is the token's audience; AuthSettings.validate_token_resource makes the SDK
        # refuse a token whose audience is not this server's URL.
        return AccessToken(
            token=token,
            client_id=claims["client_id"],
            scopes=claims.get("scope", "").split(),
            expires_at=claims.get("exp"),
            resource=claims.get("aud"),
            subject=claims.get("sub"),
            claims=claims,
        )


class MemoryEventStore(EventStore):
    """Keeps every event of this process, so that any stream can be resumed after any event."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = str(len(self.events))
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        stream = next((stream for (event_id, stream, _) in self.events if event_id == last_event_id), None)
        if stream is None:
            return None
        after = int(last_event_id)
        for event_id, event_stream, message in self.events[after + 1 :]:
            if event_stream == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


def make_server(
    auth: AuthSettings | None, token_verifier: IntrospectionVerifier | None, resumable: bool = False
) -> MCPServer:
    n_tool_calls = 0
    n_sleeping = 0

    # Middleware sees every request before lookup and validation, so even a call to an unknown
    # tool counts.
    async def count_tool_calls(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        nonlocal n_tool_calls
        if ctx.method == "tools/call":
            n_tool_calls += 1
        return await call_next(ctx)

    server = MCPServer(
        "remote-fixture",
        version="1.0.0",
        auth=auth,
        token_verifier=token_verifier,
        middleware=[count_tool_calls],
    )

    @server.tool()
    def echo(text: str) -> str:
        """Answers with the given text."""
        return text

    @server.tool()
    def whoami() -> str:
        """Names the subject of the bearer token."""
        token = get_access_token()
        return "anonymous" if token is None else str(token.subject)

    @server.tool()
    async def slow(ms: int) -> str:
        """Sleeps for `ms` milliseconds."""
        nonlocal n_sleeping
        n_sleeping += 1
        try:
            await anyio.sleep(ms / 1000)
        finally:
            n_sleeping -= 1
        return f"slept {ms}"

    @server.tool()
    def sleeping() -> int:
        """How many `slow` calls are sleeping now."""
        return n_sleeping

    @server.tool()
    def count() -> int:
        """How many tool calls this process has received, this one included."""
        return n_tool_calls

    @server.tool()
    def ask_name(answer: Annotated[ElicitationResult[Person], Resolve(ask_person)]) -> str:
        """Asks the client for a name (elicitation) and greets it."""
        if isinstance(answer, AcceptedElicitation):
            return f"hello {answer.data.name}"
        return "declined" if answer.action == "decline" else "cancelled"

    @server.tool()
    def region(name: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        """Answers with `name`, which a 2026-07-28 client also sends as `Mcp-Param-Region`."""
        return name

    if resumable:

        @server.tool()
        async def pause(ms: int, ctx: Context) -> str:
            """Closes this request's stream, then answers after `ms` milliseconds."""
            await ctx.close_sse_stream()
            await anyio.sleep(ms / 1000)
            return f"resumed after {ms} ms"

    return server


def garbage_app(kind: str) -> Starlette:
    async def answer(request: Request) -> HTMLResponse:
        if kind == "hang":
            await anyio.sleep_forever()
        return HTMLResponse("<!doctype html><html><body><h1>Sign in to continue</h1></body></html>")

    return Starlette(routes=[Route("/mcp", answer, methods=["POST"])])


class RequireHeader:
    """ASGI middleware: 401 to an HTTP request without the header NAME set to VALUE."""

    def __init__(self, app: Any, name: str, value: str):
        self.app, self.name, self.value = app, name, value

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/.well-known/"):
            got = Headers(scope=scope).get(self.name)
            if got != self.value:
                error = "missing_header" if got is None else "wrong_header"
                message = f"header {self.name} is {'missing' if got is None else 'wrong'}"
                body = {"error": error, "header": self.name, "message": message}
                await JSONResponse(body, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def main() -> None:
    parser = argparse.ArgumentParser(description="A remote MCP server for Switchboard's tests.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--transport", choices=["streamable", "sse"], default="streamable")
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--resumable", action="store_true")
    parser.add_argument("--auth", metavar="ISSUER")
    parser.add_argument("--introspection-client", metavar="ID")
    parser.add_argument("--introspection-secret", metavar="SECRET")
    parser.add_argument("--garbage", choices=["html", "hang"])
    parser.add_argument("--require-header", metavar="NAME=VALUE")
    args = parser.parse_args()
    if args.auth and not (args.introspection_client and args.introspection_secret):
        parser.error("--auth needs --introspection-client and --introspection-secret")
    if args.require_header and "=" not in args.require_header:
        parser.error("--require-header takes NAME=VALUE")

    # stdout carries only the ready line; uvicorn would print its access log there.
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)

    # The resource URL names the port, so the socket is bound before the app is made.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", args.port))
    sock.listen()
    path = "/sse" if args.transport == "sse" and not args.garbage else "/mcp"
    url = f"http://127.0.0.1:{sock.getsockname()[1]}{path}"

    if args.garbage:
        app = garbage_app(args.garbage)
    else:
        auth = None
        token_verifier = None
        if args.auth:
            auth = AuthSettings(
                issuer_url=args.auth,
                resource_server_url=url,
                required_scopes=[SCOPE],
                validate_token_resource=True,
            )
            token_verifier = IntrospectionVerifier(args.auth, args.introspection_client, args.introspection_secret)
        server = make_server(auth, token_verifier, args.resumable)
        if args.transport == "sse":
            app = server.sse_app()
        elif args.resumable:
            app = server.streamable_http_app(event_store=MemoryEventStore(), retry_interval=100)
        else:
            app = server.streamable_http_app(stateless_http=args.stateless, json_response=args.stateless)
    if args.require_header:
        name, value = args.require_header.split("=", 1)
        app = RequireHeader(app, name, value)

    # The socket already listens: a client that connects now waits in the backlog.
    print(json.dumps({"url": url}), flush=True)
    # Open SSE streams and hanging requests would hold a graceful shutdown forever.
    config = uvicorn.Config(app, log_config=None, timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
