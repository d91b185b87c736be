#!/usr/bin/env python3
"""sandbox_probe.py - a small MCP server (newline-delimited JSON-RPC 2.0 over stdio)
whose tools try what a sandbox should refuse, and say what happened. Standard
library only; used by Switchboard's sandbox tests (tests/it/sandbox.rs).

Each tool answers "ok: <detail>" when the attempt worked and "refused: <error>"
when the system refused it; the server keeps answering either way.

Tools:
  read {path}            -> read the file
  write {path, text}     -> create or replace the file
  connect {port, host}   -> open a TCP connection (host defaults to 127.0.0.1)
  abstract {name}        -> connect to the abstract Unix socket "\\0<name>"
  unix {path, line}      -> connect to the Unix socket at path; with a line, send
                            it and answer the first line that comes back
  descriptors            -> the numbers of its open file descriptors, as JSON
  signal {pid}           -> send SIGTERM to pid
  environment            -> the names of its environment's variables, as JSON
  echo {text}            -> text
"""
import json
import os
import signal
import socket
import sys

SERVER_INFO = {"name": "sandbox-probe", "version": "1.0.0"}


def tool(name, description, properties=None):
    schema = {"type": "object"}
    if properties:
        schema["properties"] = properties
    return {"name": name, "description": description, "inputSchema": schema}


TOOLS = [
    tool("read", "Read a file", {"path": {"type": "string"}}),
    tool("write", "Write a file", {"path": {"type": "string"}, "text": {"type": "string"}}),
    tool("connect", "Open a TCP connection",
         {"port": {"type": "integer"}, "host": {"type": "string"}}),
    tool("abstract", "Connect to an abstract Unix socket", {"name": {"type": "string"}}),
    tool("unix", "Talk to a Unix socket", {"path": {"type": "string"}, "line": {"type": "string"}}),
    tool("descriptors", "The open file descriptors"),
    tool("signal", "Send SIGTERM to a process", {"pid": {"type": "integer"}}),
    tool("environment", "The names of the environment's variables"),
    tool("echo", "Echo the text back", {"text": {"type": "string"}}),
]


def refused(error):
    return f"refused: {type(error).__name__}: {error}"


def attempt(name, arguments):
    try:
        if name == "read":
            with open(arguments["path"], encoding="utf-8", errors="replace") as file:
                return "ok: " + file.read()
        if name == "write":
            with open(arguments["path"], "w", encoding="utf-8") as file:
                file.write(arguments.get("text", ""))
            return "ok: written"
        if name == "connect":
            host = arguments.get("host", "127.0.0.1")
            with socket.create_connection((host, int(arguments["port"])), timeout=5):
                return "ok: connected"
        if name == "abstract":
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
                unix.settimeout(5)
                unix.connect("\0" + arguments["name"])
                return "ok: connected"
        if name == "unix":
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
                unix.settimeout(5)
                unix.connect(arguments["path"])
                if arguments.get("line") is None:
                    return "ok: connected"
                unix.sendall(arguments["line"].encode() + b"\n")
                answer = b""
                while not answer.endswith(b"\n"):
                    chunk = unix.recv(4096)
                    if not chunk:
                        break
                    answer += chunk
                return "ok: " + answer.decode(errors="replace").strip()
        if name == "descriptors":
            return json.dumps(sorted(int(fd) for fd in os.listdir("/proc/self/fd")))
        if name == "signal":
            os.kill(int(arguments["pid"]), signal.SIGTERM)
            return "ok: sent"
        if name == "environment":
            return json.dumps(sorted(os.environ))
        if name == "echo":
            return arguments.get("text", "")
    except OSError as error:
        return refused(error)
    raise KeyError(name)


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def handle(request):
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": SERVER_INFO,
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        try:
            text = attempt(params.get("name"), params.get("arguments") or {})
        except KeyError:
            raise LookupError(f"no tool {params.get('name')!r}")
        return {"content": [{"type": "text", "text": text}]}
    raise LookupError(f"method not found: {method}")


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue
        try:
            send({"jsonrpc": "2.0", "id": request["id"], "result": handle(request)})
        except LookupError as error:
            send({"jsonrpc": "2.0", "id": request["id"],
                  "error": {"code": -32601, "message": str(error)}})


if __name__ == "__main__":
    main()
