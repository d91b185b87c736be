#!/usr/bin/env python3
"""source.py - an MCP Registry source (API v0.1) serving tests/registry/entries.json, used by
Switchboard's tests. Standard library only.

    source.py [--port N] [--page-size N] [--generate N]
              [--mode ok|garbage|slow|hang|fail] [--slow-seconds S]

It listens on 127.0.0.1 (`--port 0`, the default, takes any free port) and, once it does,
prints exactly one line on stdout, its base URL, and nothing else there:
    {"url": "http://127.0.0.1:PORT"}
Logs go to stderr.

The registry API (every answer `application/json`; errors `application/problem+json`
`{"title", "status", "detail"}`):
  GET /v0.1/servers?limit=&cursor=&search=&updated_since=&version=
        {"servers": [{"server": ..., "_meta": {"io.modelcontextprotocol.registry/official":
        {...}}}], "metadata": {"count": N, "nextCursor": "..."}}, ordered by name then
        publishedAt. `limit` defaults to 30 and is capped at 100 and at --page-size;
        `nextCursor` is absent on the last page. `search`: a case-insensitive substring of
        the name. `version`: `latest` keeps the records whose isLatest is true, any other
        value the records of exactly that version. `updated_since` (RFC 3339) keeps the
        records updated after it. Every status is listed, `deleted` included.
  GET /v0.1/servers/{name}/versions             every version of one server, same shape
  GET /v0.1/servers/{name}/versions/{version}   one record; `latest` is the isLatest one
        {name} and {version} are one path segment each, URL-encoded (`io.github.x%2Fy`);
        an unknown one, or a name whose `/` is not encoded, is 404.
  GET /files/bad-digest.mcpb   a small zip with a manifest.json, whose SHA-256 is not the
        `fileSha256` of the entry io.github.switchboard-tests/bad-digest
  GET /files/good.mcpb   a bundle that runs tests/backends/sdk_server.py with this Python, whose
        SHA-256 is the `fileSha256` of the entry io.github.switchboard-tests/bundle (added at start)
`{SOURCE}` anywhere in a record is replaced with this source's base URL when it is served.

For tests (these answer normally whatever the mode, and are not counted):
  GET  /_stats         {"requests": {"/v0.1/servers": 3, ...}}: registry requests per path
                       (the query left out) since start
  POST /_set_status    {"name", "version", "status", "statusMessage"?}: changes a record's
                       status and sets its updatedAt to now; answers the record
  POST /_publish       a full record {"server": ..., "_meta"?: ...}: adds a version, which
                       becomes the latest (the others of that name lose isLatest, their
                       updatedAt set to now); `_meta` defaults to active, published now.
                       409 if that name and version exist already
  POST /_mode          {"mode": ..., "slowSeconds"?: S}: switches the mode from now on

Modes (--mode, default ok):
  ok       serves the API above
  garbage  every request answers 200 with a text/html page
  slow     every request sleeps --slow-seconds (default 5), then answers normally
  hang     every request is read and never answered; the connection stays open
  fail     every request answers 500

--hostile adds the hostile entries of tests/registry/hostile.json (each named in the README,
every one marked HOSTILE in its description) and these bundles, made at start, small on disk:
  GET /files/bomb.mcpb       a zip bomb: 64 MiB of zeros packed into about 64 KiB
  GET /files/many.mcpb       20,000 empty files
  GET /files/marker.mcpb     a bundle that runs, and first writes --marker PATH: proof that it ran
  GET /files/redirect.mcpb   a redirect (302) to http://…/files/good.mcpb, which is not https
each listed by an entry io.github.switchboard-tests/hostile-{bomb,many,marker,redirect} with
its real digest.

--generate N adds N synthetic active records io.github.bench-I/server-I (I = 1..N), each with
a description from a small word list and an npm package @bench-I/server-I, for benchmarks.
"""

import argparse
import base64
import copy
import datetime
import hashlib
import io
import json
import pathlib
import sys
import threading
import time
import urllib.parse
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OFFICIAL = "io.modelcontextprotocol.registry/official"
SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
ENTRIES = pathlib.Path(__file__).with_name("entries.json")
ROOT = pathlib.Path(__file__).resolve().parents[2]

WORDS = {
    "adjective": ["fast", "secure", "simple", "local", "cloud", "typed", "tiny", "friendly"],
    "noun": ["search", "notes", "calendar", "database", "weather", "files", "tickets", "maps"],
    "verb": ["query", "sync", "browse", "summarize", "track", "edit", "export", "watch"],
}


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(text: str) -> datetime.datetime:
    # Python 3.11 reads the `Z` suffix and fractions of any length up to microseconds.
    value = datetime.datetime.fromisoformat(text)
    if value.tzinfo is None:
        raise ValueError("no time zone")
    return value


def official(record: dict) -> dict:
    """The registry's metadata of a record; one served without it (as a source other than the
    official registry may) reads as active, never updated, and the latest."""
    return record.get("_meta", {}).get(OFFICIAL, {"status": "active", "publishedAt": "", "updatedAt": "2025-01-01T00:00:00Z", "isLatest": True})


def sort_key(record: dict) -> list:
    return [record["server"]["name"], official(record)["publishedAt"], record["server"]["version"]]


def has_version(record: dict, version: str) -> bool:
    """`latest` is the record whose isLatest is true; any other version is matched exactly."""
    return official(record)["isLatest"] if version == "latest" else record["server"]["version"] == version


def generated(n: int) -> list[dict]:
    records = []
    for i in range(1, n + 1):
        # Varied but reproducible: each word list is walked at its own pace.
        adjective = WORDS["adjective"][i % 8]
        noun = WORDS["noun"][(i // 8) % 8]
        verb = WORDS["verb"][(i // 64) % 8]
        published = (datetime.datetime(2025, 6, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(hours=7 * i))
        stamp = published.isoformat().replace("+00:00", "Z")
        server = {
            "$schema": SCHEMA,
            "name": f"io.github.bench-{i}/server-{i}",
            "description": f"A {adjective} MCP server to {verb} your {noun} (benchmark entry {i})",
            "version": "1.0.0",
            "repository": {"url": f"https://github.com/bench-{i}/server-{i}", "source": "github"},
            "packages": [{
                "registryType": "npm",
                "identifier": f"@bench-{i}/server-{i}",
                "version": "1.0.0",
                "runtimeHint": "npx",
                "transport": {"type": "stdio"},
            }],
        }
        meta = {"status": "active", "publishedAt": stamp, "updatedAt": stamp, "isLatest": True}
        records.append({"server": server, "_meta": {OFFICIAL: meta}})
    return records


def bundle() -> bytes:
    """A small MCP bundle (a zip with a manifest.json) for /files/bad-digest.mcpb."""
    manifest = {
        "manifest_version": "0.3",
        "name": "bad-digest",
        "version": "1.0.0",
        "description": "Served with a SHA-256 other than the one its registry entry publishes",
        "author": {"name": "Switchboard tests"},
        "server": {"type": "node", "entry_point": "server/index.js",
                   "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js"]}},
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        # A fixed date keeps the bytes, so the digest, the same from run to run.
        archive.writestr(zipfile.ZipInfo("manifest.json", (2026, 1, 1, 0, 0, 0)), json.dumps(manifest, indent=2))
        archive.writestr(zipfile.ZipInfo("server/index.js", (2026, 1, 1, 0, 0, 0)), "process.exit(1);\n")
    return buffer.getvalue()


def good_bundle() -> bytes:
    """An MCP bundle that runs: tests/backends/sdk_server.py (a server on the official Python
    SDK) as server/main.py, started by the Python running this source, which has the SDK."""
    manifest = {
        "manifest_version": "0.3",
        "name": "bundle",
        "version": "1.0.0",
        "description": "A Python MCP server in a bundle",
        "author": {"name": "Switchboard tests"},
        "server": {"type": "python", "entry_point": "server/main.py",
                   "mcp_config": {"command": sys.executable, "args": ["${__dirname}/server/main.py"],
                                  "env": {"BUNDLED_BY": "switchboard-tests"}}},
    }
    server = (ROOT / "tests/backends/sdk_server.py").read_bytes()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest, indent=2))
        info = zipfile.ZipInfo("server/main.py", (2026, 1, 1, 0, 0, 0))
        info.external_attr = 0o755 << 16
        archive.writestr(info, server)
    return buffer.getvalue()


def good_bundle_record(digest: str, name: str = "io.github.switchboard-tests/bundle",
                       path: str = "good.mcpb",
                       description: str = "An MCP bundle whose published SHA-256 matches the file served") -> dict:
    """The entry of /files/PATH, with its real digest."""
    server = {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": name,
        "description": description,
        "version": "1.0.0",
        "packages": [{"registryType": "mcpb", "identifier": "{SOURCE}/files/" + path,
                      "fileSha256": digest, "transport": {"type": "stdio"}}],
    }
    stamp = "2026-09-01T10:00:00Z"
    meta = {"status": "active", "publishedAt": stamp, "updatedAt": stamp, "isLatest": True}
    return {"server": server, "_meta": {OFFICIAL: meta}}


def zipped(files: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            info = zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o755 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def hostile_bundles(marker: str) -> dict[str, bytes]:
    """The hostile bundles of --hostile, by file name."""
    manifest = lambda env: json.dumps({
        "manifest_version": "0.3", "name": "hostile", "version": "1.0.0",
        "description": "HOSTILE (synthetic, for tests)", "author": {"name": "Switchboard tests"},
        "server": {"type": "python", "entry_point": "server/main.py",
                   "mcp_config": {"command": sys.executable, "args": ["${__dirname}/server/main.py"], "env": env}}})
    runs_and_marks = (
        "import os, pathlib, runpy\n"
        "pathlib.Path(os.environ['MARKER_FILE']).write_text('the bundle ran\\n')\n"
        "runpy.run_path(os.path.join(os.path.dirname(__file__), 'sdk_server.py'), run_name='__main__')\n")
    return {
        "bomb.mcpb": zipped([("manifest.json", manifest({}).encode()), ("server/zeros", bytes(64 * 1024 * 1024))]),
        "many.mcpb": zipped([("manifest.json", manifest({}).encode())]
                            + [(f"server/f{index}", b"") for index in range(20_000)]),
        "marker.mcpb": zipped([("manifest.json", manifest({"MARKER_FILE": marker}).encode()),
                               ("server/main.py", runs_and_marks.encode()),
                               ("server/sdk_server.py", (ROOT / "tests/backends/sdk_server.py").read_bytes())]),
    }


class State:
    def __init__(self, records: list[dict], page_size: int, mode: str, slow_seconds: float):
        self.lock = threading.Lock()
        self.records = sorted(records, key=sort_key)
        self.page_size = page_size
        self.mode = mode
        self.slow_seconds = slow_seconds
        self.requests: dict[str, int] = {}
        self.bundle = bundle()
        self.base_url = ""


class Problem(Exception):
    def __init__(self, status: int, title: str, detail: str):
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail


def encode_cursor(key: list) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> list:
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if isinstance(key, list) and len(key) == 3 and all(isinstance(part, str) for part in key):
            return key
    except ValueError:
        pass
    raise Problem(400, "Bad Request", "invalid cursor")


class Handler(BaseHTTPRequestHandler):
    state: State
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:
        sys.stderr.write(f"source.py: {self.address_string()} {format % args}\n")

    def do_GET(self) -> None:
        self.handle_request()

    def do_POST(self) -> None:
        self.handle_request()

    def handle_request(self) -> None:
        state = self.state
        path, _, query = self.path.partition("?")
        # A POST body is read whatever the mode, so that the connection stays usable.
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if self.command == "POST" else b""
        try:
            if path.startswith("/_"):
                try:
                    return self.control(path, body)
                except (KeyError, TypeError, ValueError) as error:
                    raise Problem(400, "Bad Request", f"bad request body: {error!r}")
            with state.lock:
                state.requests[path] = state.requests.get(path, 0) + 1
                mode, slow_seconds = state.mode, state.slow_seconds
            if mode == "hang":
                threading.Event().wait()  # the handler thread is a daemon: it dies with the process
            if mode == "slow":
                time.sleep(slow_seconds)
            if mode == "garbage":
                return self.send(200, b"<!doctype html><html><body><h1>Sign in to continue</h1></body></html>",
                                 "text/html; charset=utf-8")
            if mode == "fail":
                raise Problem(500, "Internal Server Error", "the registry is failing (--mode fail)")
            if self.command != "GET":
                raise Problem(405, "Method Not Allowed", f"{self.command} {path}")
            self.registry(path, urllib.parse.parse_qs(query))
        except Problem as problem:
            body = {"title": problem.title, "status": problem.status, "detail": problem.detail}
            self.send(problem.status, json.dumps(body).encode(), "application/problem+json")

    def registry(self, path: str, query: dict) -> None:
        state = self.state
        if path == "/files/bad-digest.mcpb":
            return self.send(200, state.bundle, "application/zip")
        if path == "/files/good.mcpb":
            return self.send(200, state.good_bundle, "application/zip")
        if path == "/files/redirect.mcpb" and state.hostile:
            self.send_response(302)
            self.send_header("Location", f"{state.base_url}/files/good.mcpb")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path.startswith("/files/") and path[len("/files/"):] in state.hostile:
            return self.send(200, state.hostile[path[len("/files/"):]], "application/zip")
        # Split the raw path before decoding, so that an encoded `/` stays inside its segment.
        segments = path.split("/")
        if segments[:3] != ["", "v0.1", "servers"]:
            raise Problem(404, "Not Found", f"no route {path}")
        if len(segments) == 3:
            return self.send_json(self.list_servers(query))
        if len(segments) not in (5, 6) or segments[4] != "versions":
            raise Problem(404, "Not Found", f"no route {path}")
        name = urllib.parse.unquote(segments[3])
        with state.lock:
            # Copies: /_set_status may change a record while it is being written out.
            versions = copy.deepcopy([record for record in state.records if record["server"]["name"] == name])
        if not versions:
            raise Problem(404, "Not Found", f"Server not found: {name}")
        if len(segments) == 5:
            return self.send_json({"servers": versions, "metadata": {"count": len(versions)}})
        version = urllib.parse.unquote(segments[5])
        for record in versions:
            if has_version(record, version):
                return self.send_json(record)
        raise Problem(404, "Not Found", f"Server version not found: {name} {version}")

    def list_servers(self, query: dict) -> dict:
        state = self.state
        arg = lambda key: query.get(key, [None])[0]
        try:
            limit = int(arg("limit") or 30)
        except ValueError:
            raise Problem(422, "Unprocessable Entity", "limit must be an integer")
        if limit < 1:
            raise Problem(422, "Unprocessable Entity", "limit must be at least 1")
        limit = min(limit, 100, state.page_size)
        search, version, since = (arg("search") or "").lower(), arg("version"), arg("updated_since")
        try:
            since = since and parse_time(since)
        except ValueError:
            raise Problem(422, "Unprocessable Entity", "updated_since must be an RFC 3339 time")
        after = decode_cursor(arg("cursor")) if arg("cursor") else None

        with state.lock:
            matching = [
                record for record in state.records
                if search in record["server"]["name"].lower()
                and (not version or has_version(record, version))
                and (not since or parse_time(official(record)["updatedAt"]) > since)
                and (after is None or sort_key(record) > after)
            ]
            page = copy.deepcopy(matching[:limit])
        metadata = {"count": len(page)}
        if len(matching) > limit:
            metadata["nextCursor"] = encode_cursor(sort_key(page[-1]))
        return {"servers": page, "metadata": metadata}

    def control(self, path: str, body: bytes) -> None:
        state = self.state
        if path == "/_stats" and self.command == "GET":
            with state.lock:
                return self.send_json({"requests": dict(state.requests)})
        if self.command != "POST":
            raise Problem(404, "Not Found", f"no route {self.command} {path}")
        try:
            request = json.loads(body)
        except ValueError:
            raise Problem(400, "Bad Request", "the body is not JSON")
        with state.lock:
            if path == "/_set_status":
                for record in state.records:
                    if record["server"]["name"] == request["name"] and record["server"]["version"] == request["version"]:
                        meta = official(record)
                        meta["status"] = request["status"]
                        meta.pop("statusMessage", None)
                        if request.get("statusMessage"):
                            meta["statusMessage"] = request["statusMessage"]
                        meta["updatedAt"] = now()
                        return self.send_json(record)
                raise Problem(404, "Not Found", f"no record {request['name']} {request['version']}")
            if path == "/_publish":
                server = request["server"]
                if any(r["server"]["name"] == server["name"] and r["server"]["version"] == server["version"] for r in state.records):
                    raise Problem(409, "Conflict", f"{server['name']} {server['version']} exists already")
                stamp = now()
                for record in state.records:
                    if record["server"]["name"] == server["name"] and official(record)["isLatest"]:
                        official(record).update(isLatest=False, updatedAt=stamp)
                record = {"server": server, "_meta": request.get("_meta") or {
                    OFFICIAL: {"status": "active", "publishedAt": stamp, "updatedAt": stamp, "isLatest": True}}}
                official(record)["isLatest"] = True
                state.records = sorted(state.records + [record], key=sort_key)
                return self.send_json(record)
            if path == "/_mode":
                if request.get("mode") not in ("ok", "garbage", "slow", "hang", "fail"):
                    raise Problem(400, "Bad Request", "mode must be ok, garbage, slow, hang or fail")
                state.mode = request["mode"]
                state.slow_seconds = float(request.get("slowSeconds", state.slow_seconds))
                return self.send_json({"mode": state.mode, "slowSeconds": state.slow_seconds})
        raise Problem(404, "Not Found", f"no route {path}")

    def send_json(self, value: dict) -> None:
        text = json.dumps(value).replace("{SOURCE}", self.state.base_url)
        self.send(200, text.encode(), "application/json")

    def send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    parser = argparse.ArgumentParser(description="An MCP Registry source for Switchboard's tests.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=100, help="the most records a page holds")
    parser.add_argument("--generate", type=int, default=0, metavar="N", help="add N synthetic records")
    parser.add_argument("--mode", choices=["ok", "garbage", "slow", "hang", "fail"], default="ok")
    parser.add_argument("--slow-seconds", type=float, default=5.0)
    parser.add_argument("--hostile", action="store_true", help="add the hostile entries and bundles")
    parser.add_argument("--marker", default="", help="the file the hostile marker bundle writes when it runs")
    args = parser.parse_args()
    if args.page_size < 1:
        parser.error("--page-size must be at least 1")

    good = good_bundle()
    records = json.loads(ENTRIES.read_text()) + generated(args.generate)
    records.append(good_bundle_record(hashlib.sha256(good).hexdigest()))
    hostile = {}
    if args.hostile:
        hostile = hostile_bundles(args.marker)
        records += json.loads(ENTRIES.with_name("hostile.json").read_text())
        for kind, data in [*hostile.items(), ("redirect.mcpb", good)]:
            stem = kind.removesuffix(".mcpb")
            records.append(good_bundle_record(hashlib.sha256(data).hexdigest(),
                                              f"io.github.switchboard-tests/hostile-{stem}", kind,
                                              f"HOSTILE (synthetic, for tests): the bundle {kind}"))
    Handler.state = State(records, args.page_size, args.mode, args.slow_seconds)
    Handler.state.good_bundle = good
    Handler.state.hostile = hostile
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    Handler.state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    print(json.dumps({"url": Handler.state.base_url}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
