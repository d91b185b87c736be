#!/usr/bin/env python3
"""malicious_server.py - a protected MCP resource whose authorization server lies, for
Switchboard's sign-in tests. It serves no MCP: every POST answers 401 with a Bearer challenge
naming its protected resource metadata, which names this same server as the authorization
server; the authorization server metadata it then serves is wrong in the way MODE says:

    malicious_server.py MODE [CLAIMED_ISSUER]

    wrong-issuer    the metadata claims to be CLAIMED_ISSUER's (a real issuer elsewhere)
    plain-endpoint  the token endpoint is plain http:// on another host
    redirect        the metadata address redirects (302) to CLAIMED_ISSUER's metadata

It listens on 127.0.0.1 on a free port and prints one line on stdout when it does:
    {"url": "http://127.0.0.1:PORT/mcp"}
Python's standard library only.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]
CLAIMED = sys.argv[2] if len(sys.argv) > 2 else "http://127.0.0.1:1"


class Handler(BaseHTTPRequestHandler):
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def send_json(self, status: int, document: dict) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        metadata = f"{self.base()}/.well-known/oauth-protected-resource/mcp"
        self.send_response(401)
        self.send_header("WWW-Authenticate", f'Bearer resource_metadata="{metadata}"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        if self.path.startswith("/.well-known/oauth-protected-resource"):
            self.send_json(200, {"resource": f"{self.base()}/mcp", "authorization_servers": [self.base()]})
            return
        if self.path == "/.well-known/oauth-authorization-server":
            if MODE == "redirect":
                self.send_response(302)
                self.send_header("Location", f"{CLAIMED}/.well-known/oauth-authorization-server")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            issuer = CLAIMED if MODE == "wrong-issuer" else self.base()
            token = "http://tokens.example.com/token" if MODE == "plain-endpoint" else f"{issuer}/token"
            self.send_json(200, {
                "issuer": issuer,
                "authorization_endpoint": f"{issuer}/auth",
                "token_endpoint": token,
                "code_challenge_methods_supported": ["S256"],
            })
            return
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write(format % args + "\n")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(json.dumps({"url": f"http://127.0.0.1:{server.server_address[1]}/mcp"}), flush=True)
server.serve_forever()
