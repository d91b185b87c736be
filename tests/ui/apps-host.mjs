// The host side of MCP Apps in the page, as an editor that renders views runs it: the official
// `@modelcontextprotocol/ext-apps` bridge talks to the view in a sandboxed frame, and passes the
// view's tool calls to `window.hostCallTool`, which the test gives the page (its MCP client in
// Node, connected to Switchboard's `/mcp`). Bundled for the browser by `apps.test.mjs`.

import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

/**
 * Shows the view `html` in a sandboxed frame and hands it the tool call it belongs to.
 * @param {string} html the view, as `resources/read` gave it
 * @param {object} input the call's arguments
 * @param {object} result the call's result
 */
window.showView = async (html, input, result) => {
  const frame = document.createElement("iframe");
  frame.id = "view";
  frame.sandbox = "allow-scripts";
  frame.style.cssText = "width: 100%; height: 420px; border: 1px solid #ccc";
  document.body.append(frame);
  const bridge = new AppBridge(
    null,
    { name: "switchboard-test-host", version: "1.0.0" },
    { serverTools: {}, logging: {} },
  );
  bridge.oncalltool = (params) => window.hostCallTool(params);
  bridge.onloggingmessage = () => {};
  bridge.oninitialized = () => {
    bridge.sendToolInput({ arguments: input });
    bridge.sendToolResult(result);
  };
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = html;
};
