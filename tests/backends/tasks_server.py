#!/usr/bin/env python3
"""A 2026-07-28-only MCP server over stdio that offers the Tasks extension
(`io.modelcontextprotocol/tasks`), written from the extension's specification with no SDK, since
the official server SDKs do not serve the extension yet.

It answers `initialize` with -32022 (unsupported version, naming only 2026-07-28), and serves
`server/discover`, `tools/list`, `tools/call`, `tasks/get`, `tasks/update`, `tasks/cancel` and
`subscriptions/listen` (acknowledged and kept open).

Tool `report {title, figures}`: for a request that declares the extension, answers with a task
handle (`resultType: "task"`). The task first needs input: `tasks/get` shows it `input_required`
with a form elicitation under the key `approve`; once `tasks/update` brings that answer, it is
`completed` with the text `report TITLE approved by NAME`. With `figures: true` its result also
carries `structuredContent` written as `FIGURES` is, numbers that only a copy of the bytes
keeps (`1.50`, and `1e400`, which no double holds). A request that does not declare the
extension gets -32021 naming it.
"""

import json
import sys
import time

VERSION = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/tasks"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
FIGURES = '{"total": 1.50, "huge": 1e400}'
# Stands in the message for FIGURES, which json.dumps cannot write, until it is sent.
FIGURES_MARK = "figures written as they are"

tasks = {}  # task id -> {"title", "status", "approved_by", "created"}


def send(message):
    sys.stdout.write(json.dumps(message).replace(json.dumps(FIGURES_MARK), FIGURES) + "\n")
    sys.stdout.flush()


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def task_state(task_id):
    task = tasks[task_id]
    state = {
        "taskId": task_id,
        "status": task["status"],
        "createdAt": task["created"],
        "lastUpdatedAt": now(),
        "ttlMs": 60000,
        "pollIntervalMs": 50,
    }
    if task["status"] == "input_required":
        state["inputRequests"] = {
            "approve": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Approve report %s?" % task["title"],
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"],
                    },
                },
            }
        }
    if task["status"] == "completed":
        text = "report %s approved by %s" % (task["title"], task["approved_by"])
        state["result"] = {"content": [{"type": "text", "text": text}], "isError": False}
        if task["figures"]:
            state["result"]["structuredContent"] = FIGURES_MARK
    return state


class RpcError(Exception):
    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def known_task(params):
    task_id = params.get("taskId")
    if task_id not in tasks:
        raise RpcError(-32602, "unknown task: %s" % task_id)
    return task_id


def call_tool(params):
    if params.get("name") != "report":
        raise RpcError(-32602, "unknown tool: %s" % params.get("name"))
    declared = params.get("_meta", {}).get(META_CAPABILITIES, {})
    if EXTENSION not in declared.get("extensions", {}):
        raise RpcError(-32021, "this tool runs as a task",
                       {"requiredCapabilities": {"extensions": {EXTENSION: {}}}})
    task_id = "task-%d" % (len(tasks) + 1)
    arguments = params.get("arguments", {})
    tasks[task_id] = {"title": arguments.get("title", ""), "status": "input_required",
                      "approved_by": None, "created": now(),
                      "figures": arguments.get("figures") is True}
    return dict(task_state(task_id), resultType="task")


def update_task(params):
    task_id = known_task(params)
    answer = params.get("inputResponses", {}).get("approve")
    if tasks[task_id]["status"] == "input_required" and answer and answer.get("action") == "accept":
        tasks[task_id]["approved_by"] = answer.get("content", {}).get("name")
        tasks[task_id]["status"] = "completed"
    return {"resultType": "complete"}


def cancel_task(params):
    task_id = known_task(params)
    if tasks[task_id]["status"] not in ("completed", "cancelled"):
        tasks[task_id]["status"] = "cancelled"
    return {"resultType": "complete"}


def discover(_params):
    return {
        "resultType": "complete",
        "supportedVersions": [VERSION],
        "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "tasks-fixture", "version": "1"}},
        "ttlMs": 0,
        "cacheScope": "public",
    }


TOOLS = [{
    "name": "report",
    "description": "Writes a report once someone approves it (runs as a task)",
    "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}},
}]

HANDLERS = {
    "server/discover": discover,
    "tools/list": lambda _: {"resultType": "complete", "tools": TOOLS, "ttlMs": 0,
                             "cacheScope": "public"},
    "tools/call": call_tool,
    "tasks/get": lambda params: dict(task_state(known_task(params)), resultType="complete"),
    "tasks/update": update_task,
    "tasks/cancel": cancel_task,
}


def main():
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        params = message.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": [VERSION], "requested": params.get("protocolVersion")}}})
            continue
        if method == "subscriptions/listen":
            send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                  "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": request_id},
                             "notifications": {}}})
            continue
        handler = HANDLERS.get(method)
        try:
            if handler is None:
                raise RpcError(-32601, "method not found: %s" % method)
            send({"jsonrpc": "2.0", "id": request_id, "result": handler(params)})
        except RpcError as error:
            body = {"code": error.code, "message": error.message}
            if error.data is not None:
                body["data"] = error.data
            send({"jsonrpc": "2.0", "id": request_id, "error": body})


if __name__ == "__main__":
    main()
