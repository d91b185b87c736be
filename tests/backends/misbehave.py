#!/usr/bin/env python3
"""misbehave.py - a small MCP server (newline-delimited JSON-RPC 2.0 over stdio)
that can be told to misbehave. Standard library only; used by Switchboard's tests.

Flags:
  --banner                  two non-JSON lines on stdout at startup, "noise" after initialize
  --crash-after N           after answering N tools/call requests, exit with code 7
  --no-initialize           never answer `initialize`
  --exit-during-handshake C on `initialize`, exit with code C without answering
  --protocol-version V      answer initialize with V instead of the client's version
  --grandchild              fork a grandchild (same process group) that ignores SIGTERM
                            and sleeps forever; its pid goes to stderr
  --ignore-sigterm          this process ignores SIGTERM
  --stderr-spam N           write N lines to stderr at startup
  --slow-start MS           sleep MS before reading stdin
  --pidfile PATH            atomically write "<pid> <grandchild pid or empty>" to PATH
  --print-env NAME          write "NAME=<its value>" to stderr at startup
  --describe-from PATH      echo's description is the text of PATH, read at startup
  --echo-as NAME            echo is listed as NAME (a name another server's tool has through
                            Switchboard, say), and answers to it too
  --tools-from PATH         tools/list answers with the bytes of PATH as its `tools`, unpaged
                            and unchecked, so they may hold what Python cannot write (1e400, a
                            lone surrogate escape, nesting deeper than any parser's default)
  --instructions-from PATH  initialize's `instructions` are the text of PATH
  --prompt-from PATH        the prompt hello's description is the text of PATH
  --label TEXT              ignored: an argument for tests of how arguments are shown
  --refuse METHOD=CODE      answer every METHOD request with error CODE (repeatable), whatever
                            the capabilities say (-32601: a list the server declares and lacks)
  --raw-args                also list raw_args (below)

Tools (tools/call, each in its own thread; tools/list is paginated, 2 per page):
  echo {text}        -> text (result also has top-level "x-extra": 1)
  slow {ms, text}    -> "slept <ms>" (then " <text>" when text is given), with
                        notifications/progress every ~10 ms if
                        params._meta.progressToken is given
  hang               -> never answers (notifications/cancelled is recorded)
  huge {bytes}       -> text of exactly `bytes` 'x' characters
  garbage            -> writes non-JSON / invalid UTF-8 / truncated / empty lines,
                        then answers "after garbage"
  crash {code=3}     -> exits with `code` without answering
  stderr {lines=1000}-> writes `lines` lines to stderr, answers "wrote <n>"
  change_tools       -> adds tool `added_later`, sends notifications/tools/list_changed
  cancelled_ids      -> JSON array of cancelled request ids
  in_flight          -> JSON array of the ids of the other tools/call requests received
                        and neither answered nor cancelled
  pid                -> {"pid": ..., "grandchild": ...}
  fail               -> result with "isError": true
  ask {method,params}-> sends that request to the client; answers with its reply as JSON text
  update {uri}       -> sends notifications/resources/updated for uri
  log {text}         -> sends notifications/message with text
  log_level          -> the level of the last logging/setLevel
  raw_args {...}     -> (with --raw-args) its arguments as received, every number written as
                        its own text (`1.50`, `1e400`, `12345678901234567890` as they came)
Also answers logging/setLevel and completion/complete (values: "<ref name or uri>:<value>").
Any ui:// URI reads as text/plain (a view an MCP App must not be given).
A cancelled tools/call never gets a response. stdin EOF -> exit 0; a broken
stdout pipe -> quiet exit 0.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time

SERVER_INFO = {"name": "misbehave", "version": "1.0.0"}
DEFAULT_PROTOCOL = "2025-06-18"
EXTRA = {"x-switchboard-test": {"kept": True}}

out_lock = threading.Lock()
state_lock = threading.Lock()
answer_lock = threading.Lock()
args = None
grandchild_pid = None
answered_calls = 0
cancelled_ids = []   # raw request ids, in the order the cancellations arrived
in_flight = {}       # key(id) -> threading.Event, set when the request is cancelled
asked = {}           # id of a request we sent the client -> [threading.Event, reply message]
subscribed = []      # URIs the client subscribed to
log_level = None     # the level of the last logging/setLevel


def key(req_id):
    return json.dumps(req_id, sort_keys=True)


class Number(str):
    """A number as its text in the message."""


def number_text(value):
    """`value` as JSON, each Number written as its own text."""
    if isinstance(value, Number):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join("%s: %s" % (json.dumps(k), number_text(v)) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(number_text(v) for v in value) + "]"
    return json.dumps(value)


def tool(name, description, properties=None):
    schema = {"type": "object"}
    if properties:
        schema["properties"] = properties
    return {"name": name, "description": description, "inputSchema": schema, **EXTRA}


TOOLS = [
    tool("echo", "Echo the text back", {"text": {"type": "string"}}),
    tool("slow", "Sleep ms milliseconds, reporting progress",
         {"ms": {"type": "number"}, "text": {"type": "string"}}),
    tool("hang", "Never answer"),
    tool("huge", "Answer with `bytes` characters of 'x'", {"bytes": {"type": "integer"}}),
    tool("garbage", "Write garbage lines to stdout, then answer"),
    tool("crash", "Exit with `code` without answering", {"code": {"type": "integer"}}),
    tool("stderr", "Write `lines` lines to stderr", {"lines": {"type": "integer"}}),
    tool("change_tools", "Add a tool and send notifications/tools/list_changed"),
    tool("cancelled_ids", "List the request ids cancelled so far"),
    tool("in_flight", "List the ids of the other calls received and not yet answered or cancelled"),
    tool("pid", "Report own pid and grandchild pid"),
    tool("fail", "Answer with isError: true"),
    tool("ask", "Send `method` with `params` to the client and answer with its reply as JSON",
         {"method": {"type": "string"}, "params": {"type": "object"}}),
    tool("update", "Send notifications/resources/updated for `uri`", {"uri": {"type": "string"}}),
    tool("log", "Send notifications/message with `text`", {"text": {"type": "string"}}),
    tool("log_level", "Report the level of the last logging/setLevel"),
]
RESOURCES = [
    {"uri": "test://a", "name": "a", "mimeType": "text/plain", **EXTRA},
    {"uri": "test://b", "name": "b", "mimeType": "text/plain", **EXTRA},
]
TEMPLATES = [{"uriTemplate": "test://items/{id}", "name": "item", "mimeType": "text/plain"}]
PROMPTS = [{"name": "hello", "description": "Say hello",
            "arguments": [{"name": "name", "required": False}]}]


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


# ---------------------------------------------------------------- output

def write_raw(data):
    """Write bytes to stdout atomically w.r.t. other writers; quiet exit on EPIPE."""
    with out_lock:
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        except (BrokenPipeError, ValueError, OSError):
            os._exit(0)


def encode(obj):
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from the input
        return json.dumps(obj, separators=(",", ":")).encode("ascii")


def send(obj):
    write_raw(encode(obj) + b"\n")


def reply(req_id, result):
    send({"jsonrpc": "2.0", "id": req_id, "result": result})


def reply_error(req_id, code, message):
    send({"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}})


def notify(method, params=None):
    msg = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    send(msg)


def log(text):
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def text_result(text, **extra):
    return {"content": [{"type": "text", "text": text}], **extra}


# ---------------------------------------------------------------- tools/call

def tool_call_response(req_id, result=None, error=None, raw=None):
    """Answer a tools/call unless it was cancelled; apply --crash-after exactly."""
    global answered_calls
    if raw is None:
        body = {"error": error} if error is not None else {"result": result}
        raw = encode({"jsonrpc": "2.0", "id": req_id, **body}) + b"\n"
    with answer_lock:  # serialised, so no call slips out after the Nth answer
        with state_lock:
            cancel = in_flight.pop(key(req_id), None)
        if cancel is not None and cancel.is_set():
            return
        write_raw(raw)
        answered_calls += 1
        if args.crash_after is not None and answered_calls >= args.crash_after:
            log("misbehave: crash-after reached")
            os._exit(7)


def run_tool(req_id, params, cancel):
    name = params.get("name")
    a = params.get("arguments") or {}
    token = (params.get("_meta") or {}).get("progressToken")
    if args.echo_as is not None and name == args.echo_as:
        name = "echo"
    if name == "echo":
        return text_result(str(a.get("text", "")), **{"x-extra": 1})
    if name == "raw_args":
        return text_result(a["text"])
    if name == "slow":
        ms = float(a.get("ms", 0))
        start = time.monotonic()
        deadline = start + ms / 1000.0
        while (now := time.monotonic()) < deadline:
            if cancel.wait(min(0.01, deadline - now)):
                return None
            if token is not None and time.monotonic() < deadline:
                elapsed = (time.monotonic() - start) * 1000.0
                notify("notifications/progress",
                       {"progressToken": token, "progress": round(elapsed, 3), "total": a.get("ms", 0)})
        slept = "slept %s" % a.get("ms", 0)
        if "text" in a:
            slept += " " + str(a["text"])
        return text_result(slept)
    if name == "hang":
        cancel.wait()
        return None
    if name == "huge":
        n = int(a.get("bytes", 0))
        head = b'{"jsonrpc":"2.0","id":' + encode(req_id) + b',"result":{"content":[{"type":"text","text":"'
        tool_call_response(req_id, raw=b"".join([head, b"x" * n, b'"}]}}\n']))
        return None
    if name == "garbage":
        write_raw(b"this is not json\n\xff\xfe garbage \x80\n"
                  b'{"jsonrpc": "2.0", "broken\n\n')
        return text_result("after garbage")
    if name == "crash":
        log("misbehave: crashing now")
        os._exit(int(a.get("code", 3)))
    if name == "stderr":
        n = int(a.get("lines", 1000))
        for i in range(n):
            log("stderr line %d" % i)
        return text_result("wrote %d" % n)
    if name == "change_tools":
        with state_lock:
            if not any(t["name"] == "added_later" for t in TOOLS):
                TOOLS.append(tool("added_later", "Added by change_tools"))
        notify("notifications/tools/list_changed")
        return text_result("changed")
    if name == "added_later":
        return text_result("added later")
    if name == "cancelled_ids":
        with state_lock:
            return text_result(json.dumps(cancelled_ids))
    if name == "in_flight":
        with state_lock:
            ids = [json.loads(k) for k, event in in_flight.items()
                   if not event.is_set() and k != key(req_id)]
        return text_result(json.dumps(ids))
    if name == "pid":
        return text_result(json.dumps({"pid": os.getpid(), "grandchild": grandchild_pid}))
    if name == "fail":
        return text_result("failed on purpose", isError=True)
    if name == "ask":
        with state_lock:
            ask_id = "ask-%d" % len(asked)
            waiter = asked[ask_id] = [threading.Event(), None]
        send({"jsonrpc": "2.0", "id": ask_id, "method": a.get("method"), "params": a.get("params") or {}})
        if not waiter[0].wait(30):
            return text_result("no reply", isError=True)
        answer = waiter[1]
        return text_result(json.dumps(answer.get("result", answer.get("error"))))
    if name == "update":
        notify("notifications/resources/updated", {"uri": a.get("uri")})
        return text_result("updated")
    if name == "log_level":
        return text_result(str(log_level))
    if name == "log":
        notify("notifications/message", {"level": "info", "data": a.get("text")})
        return text_result("logged")
    raise RpcError(-32602, "Unknown tool: %s" % name)


def tool_thread(req_id, params, cancel):
    try:
        result = run_tool(req_id, params, cancel)
        if result is not None:
            tool_call_response(req_id, result=result)
    except RpcError as e:
        tool_call_response(req_id, error={"code": e.code, "message": e.message})
    except Exception as e:  # bad arguments etc.: answer, don't print a traceback
        tool_call_response(req_id, error={"code": -32603, "message": "%s: %s" % (type(e).__name__, e)})


# ---------------------------------------------------------------- other methods

def paginate(items, params, field, size):
    cursor = params.get("cursor")
    try:
        start = int(cursor) if cursor is not None else 0
    except (TypeError, ValueError):
        raise RpcError(-32602, "Invalid cursor: %r" % (cursor,))
    with state_lock:
        page = {field: [dict(x) for x in items[start:start + size]]}
        if start + size < len(items):
            page["nextCursor"] = str(start + size)
    return page


def read_resource(params):
    uri = params.get("uri", "")
    if uri in ("test://a", "test://b") or uri.startswith(("test://items/", "ui://")):
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "content of " + uri}]}
    raise RpcError(-32002, "Resource not found: %s" % uri)


def get_prompt(params):
    if params.get("name") != "hello":
        raise RpcError(-32602, "Unknown prompt: %s" % params.get("name"))
    who = (params.get("arguments") or {}).get("name", "world")
    return {"description": "Say hello",
            "messages": [{"role": "user", "content": {"type": "text", "text": "Hello, %s!" % who}}]}


def initialize(req_id, params):
    if args.exit_during_handshake is not None:
        log("misbehave: exiting during handshake")
        os._exit(args.exit_during_handshake)
    if args.no_initialize:
        return
    version = args.protocol_version or params.get("protocolVersion") or DEFAULT_PROTOCOL
    result = {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": True},
                         "resources": {"subscribe": True, "listChanged": True},
                         "prompts": {"listChanged": True},
                         "logging": {}, "completions": {}},
        "serverInfo": SERVER_INFO}
    if args.instructions_from:
        with open(args.instructions_from) as f:
            result["instructions"] = f.read()
    reply(req_id, result)
    if args.banner:
        write_raw(b"noise\n")


SIMPLE = {
    "ping": lambda p: {},
    "tools/list": lambda p: paginate(TOOLS, p, "tools", 2),
    "resources/list": lambda p: paginate(RESOURCES, p, "resources", 1),
    "resources/templates/list": lambda p: paginate(TEMPLATES, p, "resourceTemplates", 10),
    "prompts/list": lambda p: paginate(PROMPTS, p, "prompts", 10),
    "resources/read": read_resource,
    "prompts/get": get_prompt,
    "resources/subscribe": lambda p: subscribed.append(p.get("uri")) or {},
    "logging/setLevel": lambda p: set_log_level(p.get("level")),
    "completion/complete": lambda p: {"completion": {"values": [
        "%s:%s" % (p.get("ref", {}).get("name") or p.get("ref", {}).get("uri"),
                   p.get("argument", {}).get("value", ""))], "hasMore": False}},
    "resources/unsubscribe": lambda p: (p.get("uri") in subscribed and subscribed.remove(p.get("uri"))) or {},
}


def set_log_level(level):
    global log_level
    log_level = level
    return {}


def handle(msg):
    if not isinstance(msg, dict):
        return reply_error(None, -32600, "Invalid Request")
    method, req_id, is_request = msg.get("method"), msg.get("id"), "id" in msg
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    if not isinstance(method, str):
        if is_request and "result" not in msg and "error" not in msg:
            reply_error(req_id, -32600, "Invalid Request")
            return
        with state_lock:
            waiter = asked.get(req_id) if isinstance(req_id, str) else None
        if waiter is not None:  # the client's reply to an `ask`
            waiter[1] = msg
            waiter[0].set()
        return
    if method == "notifications/cancelled":
        rid = params.get("requestId")
        with state_lock:
            cancelled_ids.append(rid)
            pending = in_flight.get(key(rid))
        if pending is not None:
            pending.set()
        return
    if not is_request:
        return  # notifications/initialized and any other notification
    refused = dict(refusal.split("=", 1) for refusal in args.refuse)
    if method in refused:
        reply_error(req_id, int(refused[method]), "Refused: %s" % method)
    elif method == "initialize":
        initialize(req_id, params)
    elif method == "tools/list" and args.tools_from:
        with open(args.tools_from, "rb") as f:
            tools = f.read().strip().replace(b"\n", b" ")  # one message, one line
        write_raw(b'{"jsonrpc":"2.0","id":' + encode(req_id) + b',"result":{"tools":' + tools + b'}}\n')
    elif method == "tools/call":
        with state_lock:
            crashed = args.crash_after is not None and answered_calls >= args.crash_after
            cancel = in_flight.setdefault(key(req_id), threading.Event())
        if crashed:
            log("misbehave: crash-after reached")
            os._exit(7)
        threading.Thread(target=tool_thread, args=(req_id, params, cancel), daemon=True).start()
    elif method in SIMPLE:
        try:
            reply(req_id, SIMPLE[method](params))
        except RpcError as e:
            reply_error(req_id, e.code, e.message)
    else:
        reply_error(req_id, -32601, "Method not found: %s" % method)


# ---------------------------------------------------------------- startup

def fork_grandchild():
    pid = os.fork()
    if pid == 0:  # grandchild: same process group, ignores SIGTERM, sleeps forever
        try:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            os.close(devnull)
            while True:
                time.sleep(3600)
        finally:
            os._exit(0)
    log("misbehave: grandchild %d" % pid)
    return pid


def main():
    global args, grandchild_pid
    p = argparse.ArgumentParser(description="A deliberately misbehaving MCP server.")
    p.add_argument("--banner", action="store_true", help="non-JSON lines on stdout")
    p.add_argument("--crash-after", type=int, metavar="N", help="exit 7 after N tool answers")
    p.add_argument("--no-initialize", action="store_true", help="never answer initialize")
    p.add_argument("--exit-during-handshake", type=int, metavar="CODE")
    p.add_argument("--protocol-version", metavar="V", help="protocolVersion to answer with")
    p.add_argument("--grandchild", action="store_true", help="fork a SIGTERM-immune grandchild")
    p.add_argument("--ignore-sigterm", action="store_true")
    p.add_argument("--stderr-spam", type=int, default=0, metavar="N")
    p.add_argument("--slow-start", type=int, default=0, metavar="MS")
    p.add_argument("--pidfile", metavar="PATH", help='write "<pid> <grandchild pid>"')
    p.add_argument("--print-env", metavar="NAME", help="write NAME=<value> to stderr")
    p.add_argument("--describe-from", metavar="PATH", help="echo's description, from a file")
    p.add_argument("--echo-as", metavar="NAME", help="the name echo is listed as")
    p.add_argument("--tools-from", metavar="PATH", help="the raw JSON of tools/list's tools")
    p.add_argument("--instructions-from", metavar="PATH", help="initialize's instructions")
    p.add_argument("--prompt-from", metavar="PATH", help="the prompt hello's description")
    p.add_argument("--label", metavar="TEXT", help="ignored")
    p.add_argument("--refuse", action="append", default=[], metavar="METHOD=CODE")
    p.add_argument("--raw-args", action="store_true")
    args = p.parse_args()
    if args.raw_args:
        TOOLS.append(tool("raw_args", "Answer the arguments as received"))

    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.grandchild:
        grandchild_pid = fork_grandchild()
    if args.pidfile:
        with open(args.pidfile + ".tmp", "w") as f:
            f.write("%d %s" % (os.getpid(), grandchild_pid if grandchild_pid else ""))
        os.replace(args.pidfile + ".tmp", args.pidfile)
    if args.describe_from:
        with open(args.describe_from) as f:
            TOOLS[0]["description"] = f.read()
    if args.echo_as is not None:
        TOOLS[0]["name"] = args.echo_as
    if args.prompt_from:
        with open(args.prompt_from) as f:
            PROMPTS[0]["description"] = f.read()
    if args.print_env:
        log("%s=%s" % (args.print_env, os.environ.get(args.print_env, "")))
    for i in range(args.stderr_spam):
        log("misbehave: stderr spam %d" % i)
    if args.banner:
        write_raw(b"misbehave server starting...\nlistening on stdio\n")
    if args.slow_start:
        time.sleep(args.slow_start / 1000.0)

    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError as e:  # includes invalid UTF-8
            reply_error(None, -32700, "Parse error: %s" % e)
            continue
        if isinstance(msg, dict) and (msg.get("params") or {}).get("name") == "raw_args":
            # Read again with every number kept as its text, which the tool answers.
            raw = json.loads(line, parse_float=Number, parse_int=Number)
            msg["params"]["arguments"] = {"text": number_text(raw["params"].get("arguments"))}
        for m in (msg if isinstance(msg, list) and msg else [msg]):
            handle(m)
    with out_lock:  # EOF: exit at once, without waiting for in-flight calls
        try:
            sys.stdout.buffer.flush()
        except OSError:
            pass
        os._exit(0)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        os._exit(130)
