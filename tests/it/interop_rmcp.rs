//! Interoperability with the official Rust MCP SDK (rmcp) as the editor: a real `switchboard
//! serve` in front of real backends (the built-in demo server, the official "everything" server
//! from npm, the misbehaving test server), reached over Streamable HTTP and over stdio through
//! `switchboard connect`. Every scenario runs over both transports.
#![allow(deprecated)]

use crate::support::*;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientInfo,
    ClientRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ListRootsResult, ProgressNotificationParam,
    ProtocolVersion, ResourceUpdatedNotificationParam, Root, SamplingMessage, ServerResult,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RoleClient, RunningService,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData as McpError, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// What the editor's "model" answers to every sampling request.
const CANNED_SAMPLE: &str = "canned answer from the rmcp editor";
/// What the editor's "user" types into every form it is shown.
const ELICITED_NAME: &str = "Ada Lovelace";
/// The one root the editor offers.
const ROOT_URI: &str = "file:///tmp/switchboard-interop-root";

#[derive(Debug, Clone, Copy)]
enum Transport {
    /// rmcp's Streamable HTTP client, straight to serve's URL.
    Http,
    /// rmcp's child-process transport running `switchboard connect`.
    Stdio,
}

/// The rmcp client handler: answers sampling, elicitation and roots like an editor would, and
/// hands every request and notification it gets to the test.
struct Editor {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    resource_updates: mpsc::UnboundedSender<String>,
    tools_changed: mpsc::UnboundedSender<()>,
    sampling_requests: mpsc::UnboundedSender<Value>,
    elicitation_requests: mpsc::UnboundedSender<Value>,
}

/// The test's end of what [`Editor`] receives.
struct EditorEvents {
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    resource_updates: mpsc::UnboundedReceiver<String>,
    tools_changed: mpsc::UnboundedReceiver<()>,
    sampling_requests: mpsc::UnboundedReceiver<Value>,
    elicitation_requests: mpsc::UnboundedReceiver<Value>,
}

fn editor() -> (Editor, EditorEvents) {
    let (progress, progress_rx) = mpsc::unbounded_channel();
    let (resource_updates, resource_updates_rx) = mpsc::unbounded_channel();
    let (tools_changed, tools_changed_rx) = mpsc::unbounded_channel();
    let (sampling_requests, sampling_requests_rx) = mpsc::unbounded_channel();
    let (elicitation_requests, elicitation_requests_rx) = mpsc::unbounded_channel();
    let editor = Editor {
        progress,
        resource_updates,
        tools_changed,
        sampling_requests,
        elicitation_requests,
    };
    let events = EditorEvents {
        progress: progress_rx,
        resource_updates: resource_updates_rx,
        tools_changed: tools_changed_rx,
        sampling_requests: sampling_requests_rx,
        elicitation_requests: elicitation_requests_rx,
    };
    (editor, events)
}

impl ClientHandler for Editor {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        let _ = self
            .sampling_requests
            .send(serde_json::to_value(&params).expect("params serialize"));
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(CANNED_SAMPLE),
            "interop-model".to_owned(),
        )
        .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let _ = self
            .elicitation_requests
            .send(serde_json::to_value(&request).expect("params serialize"));
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({ "name": ELICITED_NAME, "check": true })))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        Ok(ListRootsResult::new(vec![
            Root::new(ROOT_URI).with_name("interop root"),
        ]))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.resource_updates.send(params.uri);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.send(());
    }

    fn get_info(&self) -> ClientInfo {
        let capabilities = ClientCapabilities::builder()
            .enable_roots()
            .enable_roots_list_changed()
            .enable_sampling()
            .enable_elicitation()
            .build();
        ClientInfo::new(
            capabilities,
            Implementation::new("switchboard-interop-rmcp", "1.0.0"),
        )
    }
}

type Client = RunningService<RoleClient, Editor>;

/// The `switchboard connect` process of a stdio client. Dropping it (when a test fails before
/// [`close`]) kills the process, so that it never outlives its `serve`: a shim that loses its
/// Switchboard under a live editor starts a new one.
struct ConnectProcess {
    pid: u32,
}

impl Drop for ConnectProcess {
    fn drop(&mut self) {
        if !alive(self.pid) {
            return;
        }
        let pid = nix::unistd::Pid::from_raw(self.pid as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        let _ = poll_blocking(
            EVENT_LIMIT,
            || if alive(self.pid) { Err(()) } else { Ok(()) },
        );
    }
}

/// Connects an rmcp client to `serve` over `transport` and completes the handshake. Over stdio
/// it also returns the `switchboard connect` process; declare it after `serve`.
async fn connect(
    serve: &ServeProcess,
    transport: Transport,
) -> (Client, EditorEvents, Option<ConnectProcess>) {
    let (editor, events) = editor();
    let (client, shim) = match transport {
        Transport::Http => {
            let transport = StreamableHttpClientTransport::from_uri(serve.url());
            let client = within("the handshake over HTTP", editor.serve(transport)).await;
            (client, None)
        }
        Transport::Stdio => {
            let mut command = tokio::process::Command::new(switchboard_exe());
            command.arg("connect").envs(serve.env());
            let transport = TokioChildProcess::new(command).expect("switchboard connect starts");
            let shim = transport.id().map(|pid| ConnectProcess { pid });
            assert!(shim.is_some(), "switchboard connect has a pid");
            let client = within("the handshake over stdio", editor.serve(transport)).await;
            (client, shim)
        }
    };
    match client {
        Ok(client) => (client, events, shim),
        Err(error) => panic!(
            "rmcp could not initialize over {transport:?}: {error}; serve log:\n{}",
            serve.log()
        ),
    }
}

/// Closes the client like an editor that quits; `switchboard connect` then exits by itself.
async fn close(client: Client, shim: Option<ConnectProcess>) {
    within("closing the client", client.cancel())
        .await
        .expect("the client closes");
    if let Some(shim) = shim {
        assert!(
            wait_gone(shim.pid).await,
            "switchboard connect exits once the editor closed its stdin"
        );
    }
}

/// Awaits `future` for at most [`EVENT_LIMIT`], naming `what` when it takes longer.
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(EVENT_LIMIT, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what} did not happen within {EVENT_LIMIT:?}"),
    }
}

/// The next value on `events`, which must come within [`EVENT_LIMIT`].
async fn next_event<T>(what: &str, events: &mut mpsc::UnboundedReceiver<T>) -> T {
    within(what, events.recv())
        .await
        .unwrap_or_else(|| panic!("the client closed before {what}"))
}

fn call_params(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("tool arguments are an object");
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

/// Calls `name` and returns its result, failing the test on a protocol error.
async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    let what = format!("the answer to {name}");
    match within(&what, client.peer().call_tool(call_params(name, arguments))).await {
        Ok(result) => result,
        Err(error) => panic!("{name} failed: {error}"),
    }
}

/// Every text block of a tool result, joined by newlines.
fn text_of(result: &CallToolResult) -> String {
    let result = serde_json::to_value(result).expect("results serialize");
    result["content"]
        .as_array()
        .expect("content is an array")
        .iter()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn tool_names(client: &Client) -> Vec<String> {
    let tools = within("tools/list", client.peer().list_all_tools())
        .await
        .expect("tools/list succeeds");
    tools
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect()
}

/// Waits until tools/list offers every name in `expected` (the catalog is merged shortly after
/// the backends are ready; each change is announced with `notifications/tools/list_changed`).
async fn wait_for_tools(client: &Client, events: &mut EditorEvents, expected: &[&str]) {
    let deadline = tokio::time::Instant::now() + EVENT_LIMIT;
    loop {
        let names = tool_names(client).await;
        if expected
            .iter()
            .all(|name| names.iter().any(|offered| offered == name))
        {
            return;
        }
        let changed = tokio::time::timeout_at(deadline, events.tools_changed.recv()).await;
        assert!(
            matches!(changed, Ok(Some(()))),
            "tools/list never offered all of {expected:?}; last list: {names:?}"
        );
    }
}

// ------------------------------------------------------------------ scenarios

async fn handshake_lists_and_calls_tools(transport: Transport) {
    let serve = ServeProcess::start(&[
        ServedBackend::Demo,
        ServedBackend::Everything,
        ServedBackend::Misbehave,
    ]);
    let (client, mut events, shim) = connect(&serve, transport).await;

    let server = client.peer().peer_info().expect("the handshake is done");
    let server_info = server
        .server_info
        .as_ref()
        .expect("initialize names the server");
    assert_eq!(server_info.name, "switchboard");
    assert_eq!(
        server.protocol_version,
        ProtocolVersion::V_2025_11_25,
        "rmcp asks for {}, which Switchboard does not speak, so it answers with its newest",
        ProtocolVersion::LATEST
    );
    let capabilities = &server.capabilities;
    assert!(capabilities.tools.is_some(), "{capabilities:?}");
    assert!(capabilities.resources.is_some(), "{capabilities:?}");

    wait_for_tools(
        &client,
        &mut events,
        &["demo__echo", "everything__echo", "mis__echo", "demo__add"],
    )
    .await;

    let demo = call(&client, "demo__echo", json!({"text": "hello demo"})).await;
    assert_eq!(text_of(&demo), "hello demo");
    assert_ne!(demo.is_error, Some(true));
    let everything = call(
        &client,
        "everything__echo",
        json!({"message": "hello everything"}),
    )
    .await;
    assert_eq!(text_of(&everything), "Echo: hello everything");
    let sum = call(&client, "demo__add", json!({"a": 2, "b": 40})).await;
    assert_eq!(text_of(&sum), "42");
    let failed = call(&client, "mis__fail", json!({})).await;
    assert_eq!(
        failed.is_error,
        Some(true),
        "a tool error stays a tool error"
    );

    let unknown = within(
        "the answer to an unknown tool",
        client
            .peer()
            .call_tool(call_params("nobody__nothing", json!({}))),
    )
    .await;
    assert!(
        unknown.is_err(),
        "an unknown tool is a protocol error: {unknown:?}"
    );
    close(client, shim).await;
}

async fn progress_reaches_the_caller(transport: Transport) {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let (client, mut events, shim) = connect(&serve, transport).await;
    wait_for_tools(
        &client,
        &mut events,
        &["everything__trigger-long-running-operation"],
    )
    .await;

    // rmcp gives every request a progress token of its own; Switchboard swaps it for one of its
    // own on the way to the backend and back again on each notification. The backend sends its
    // last notification right before its response; it must not be lost either, in any round.
    for round in 0..50 {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(call_params(
            "everything__trigger-long-running-operation",
            json!({"duration": 0.02, "steps": 2}),
        )));
        let handle = within(
            "sending the call",
            client
                .peer()
                .send_cancellable_request(request, PeerRequestOptions::no_options()),
        )
        .await
        .expect("the request is sent");
        let token = handle.progress_token.clone();
        let result = within("the long-running operation", handle.await_response())
            .await
            .expect("the operation succeeds");
        let ServerResult::CallToolResult(result) = result else {
            panic!("not a tool result: {result:?}");
        };
        assert!(
            text_of(&result).contains("Long running operation completed"),
            "{result:?}"
        );
        let mut steps = Vec::new();
        let deadline = tokio::time::Instant::now() + EVENT_LIMIT;
        while steps.len() < 2 {
            let Ok(Some(progress)) =
                tokio::time::timeout_at(deadline, events.progress.recv()).await
            else {
                panic!(
                    "round {round}: the backend sent progress 1 and 2 before its response; \
                     the editor got {steps:?}"
                );
            };
            assert_eq!(
                progress.progress_token, token,
                "progress carries the editor's own token"
            );
            assert_eq!(progress.total, Some(2.0));
            steps.push(progress.progress);
        }
        assert_eq!(steps, [1.0, 2.0], "round {round}");
    }
    close(client, shim).await;
}

async fn sampling_round_trip(transport: Transport) {
    let serve = ServeProcess::start(&[ServedBackend::Everything, ServedBackend::Misbehave]);
    let (client, mut events, shim) = connect(&serve, transport).await;
    wait_for_tools(
        &client,
        &mut events,
        &["everything__trigger-sampling-request", "mis__ask"],
    )
    .await;

    let result = call(
        &client,
        "everything__trigger-sampling-request",
        json!({"prompt": "what is switchboard?", "maxTokens": 20}),
    )
    .await;
    let request = next_event("the sampling request", &mut events.sampling_requests).await;
    assert_eq!(
        request["messages"][0]["content"]["text"],
        "Resource trigger-sampling-request context: what is switchboard?",
        "the backend's request arrives unchanged: {request}"
    );
    assert_eq!(request["maxTokens"], 20, "{request}");
    let text = text_of(&result);
    assert!(
        text.contains(CANNED_SAMPLE) && text.contains("interop-model"),
        "the editor's answer reaches the backend: {text}"
    );

    let result = call(
        &client,
        "mis__ask",
        json!({
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "ping?"}}],
                "maxTokens": 5,
            },
        }),
    )
    .await;
    let request = next_event("the second sampling request", &mut events.sampling_requests).await;
    assert_eq!(request["messages"][0]["content"]["text"], "ping?");
    let reply: Value = serde_json::from_str(&text_of(&result)).expect("mis answers with JSON");
    assert_eq!(reply["content"]["text"], CANNED_SAMPLE, "{reply}");
    assert_eq!(reply["model"], "interop-model", "{reply}");
    assert_eq!(reply["role"], "assistant", "{reply}");
    close(client, shim).await;
}

async fn elicitation_round_trip(transport: Transport) {
    let serve = ServeProcess::start(&[ServedBackend::Everything, ServedBackend::Misbehave]);
    let (client, mut events, shim) = connect(&serve, transport).await;
    wait_for_tools(
        &client,
        &mut events,
        &["everything__trigger-elicitation-request", "mis__ask"],
    )
    .await;

    let result = call(
        &client,
        "mis__ask",
        json!({
            "method": "elicitation/create",
            "params": {
                "message": "Who are you?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "check": {"type": "boolean"}},
                    "required": ["name"],
                },
            },
        }),
    )
    .await;
    let request = next_event("the elicitation request", &mut events.elicitation_requests).await;
    assert_eq!(request["message"], "Who are you?", "{request}");
    let reply: Value = serde_json::from_str(&text_of(&result)).expect("mis answers with JSON");
    assert_eq!(
        reply,
        json!({"action": "accept", "content": {"name": ELICITED_NAME, "check": true}})
    );

    let result = call(
        &client,
        "everything__trigger-elicitation-request",
        json!({}),
    )
    .await;
    let request = next_event(
        "the everything server's elicitation request",
        &mut events.elicitation_requests,
    )
    .await;
    assert_eq!(
        request["message"], "Please provide inputs for the following fields:",
        "{request}"
    );
    let text = text_of(&result);
    assert!(
        text.contains(&format!("- Name: {ELICITED_NAME}"))
            && text.contains("Agreed to terms: true"),
        "the user's answer reaches the backend: {text}"
    );
    close(client, shim).await;
}

async fn roots_come_from_the_editor(transport: Transport) {
    let serve = ServeProcess::start(&[ServedBackend::Everything]);
    let (client, mut events, shim) = connect(&serve, transport).await;
    wait_for_tools(&client, &mut events, &["everything__get-roots-list"]).await;

    let result = call(&client, "everything__get-roots-list", json!({})).await;
    let text = text_of(&result);
    assert!(
        text.contains(ROOT_URI) && text.contains("interop root"),
        "the backend lists the editor's root: {text}"
    );
    close(client, shim).await;
}

async fn cancellation_reaches_the_backend(transport: Transport) {
    let serve = ServeProcess::start(&[ServedBackend::Misbehave]);
    let (client, mut events, shim) = connect(&serve, transport).await;
    wait_for_tools(&client, &mut events, &["mis__slow", "mis__cancelled_ids"]).await;

    // A first progress notification proves that the call runs at the backend; only then is
    // there something to cancel there (a call cancelled earlier never needs to leave).
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(call_params(
        "mis__slow",
        json!({"ms": 60_000}),
    )));
    let handle = within(
        "sending the call",
        client
            .peer()
            .send_cancellable_request(request, PeerRequestOptions::no_options()),
    )
    .await
    .expect("the request is sent");
    let progress = next_event("progress of the slow call", &mut events.progress).await;
    assert_eq!(progress.progress_token, handle.progress_token);
    within(
        "sending the cancellation",
        handle.cancel(Some("the interop test changed its mind".to_owned())),
    )
    .await
    .expect("the cancellation is sent");

    // The cancellation is a notification: nothing answers it, so ask the backend until it
    // reports it.
    let cancelled = eventually(
        "the backend reports the cancellation",
        EVENT_LIMIT,
        || async {
            let result = call(&client, "mis__cancelled_ids", json!({})).await;
            let ids: Vec<Value> = serde_json::from_str(&text_of(&result))
                .expect("cancelled_ids answers a JSON array");
            if ids.is_empty() {
                Err(serve.log())
            } else {
                Ok(ids)
            }
        },
    )
    .await;
    assert_eq!(
        cancelled.len(),
        1,
        "the backend got exactly one notifications/cancelled for the slow call: {cancelled:?}; log:\n{}",
        serve.log()
    );

    // The session is fine afterwards.
    let echo = call(&client, "mis__echo", json!({"text": "still here"})).await;
    assert_eq!(text_of(&echo), "still here");
    close(client, shim).await;
}

async fn resource_updates_follow_subscriptions(transport: Transport) {
    let serve = ServeProcess::start(&[ServedBackend::Misbehave]);
    let (client, mut events, shim) = connect(&serve, transport).await;
    wait_for_tools(&client, &mut events, &["mis__update"]).await;

    within(
        "resources/subscribe",
        client
            .peer()
            .subscribe(SubscribeRequestParams::new("test://a")),
    )
    .await
    .expect("subscribe succeeds");
    // An update of a resource nobody subscribed to must not arrive; the one after it, of the
    // subscribed resource, must (the backend sends them in this order).
    call(&client, "mis__update", json!({"uri": "test://b"})).await;
    call(&client, "mis__update", json!({"uri": "test://a"})).await;
    let uri = next_event("the resource update", &mut events.resource_updates).await;
    assert_eq!(uri, "test://a", "only subscribed resources are announced");

    within(
        "resources/unsubscribe",
        client
            .peer()
            .unsubscribe(UnsubscribeRequestParams::new("test://a")),
    )
    .await
    .expect("unsubscribe succeeds");
    within(
        "resources/subscribe",
        client
            .peer()
            .subscribe(SubscribeRequestParams::new("test://b")),
    )
    .await
    .expect("subscribe succeeds");
    call(&client, "mis__update", json!({"uri": "test://a"})).await;
    call(&client, "mis__update", json!({"uri": "test://b"})).await;
    let uri = next_event("the second resource update", &mut events.resource_updates).await;
    assert_eq!(uri, "test://b", "an unsubscribed resource is not announced");
    close(client, shim).await;
}

async fn tool_list_changes_are_announced(transport: Transport) {
    let serve = ServeProcess::start(&[ServedBackend::Misbehave]);
    let (client, mut events, shim) = connect(&serve, transport).await;
    wait_for_tools(&client, &mut events, &["mis__change_tools"]).await;
    let before = tool_names(&client).await;
    assert!(!before.iter().any(|name| name == "mis__added_later"));

    call(&client, "mis__change_tools", json!({})).await;
    // A tool added by a server that has pins is offered once approved.
    serve.approve_when_held("mis", "added_later").await;
    // An announcement left over from startup may come first; the one that counts is followed
    // by a list with the new tool.
    let deadline = tokio::time::Instant::now() + EVENT_LIMIT;
    loop {
        let changed = tokio::time::timeout_at(deadline, events.tools_changed.recv()).await;
        assert!(
            matches!(changed, Ok(Some(()))),
            "no notifications/tools/list_changed announced mis__added_later; log:\n{}",
            serve.log()
        );
        if tool_names(&client)
            .await
            .iter()
            .any(|name| name == "mis__added_later")
        {
            break;
        }
    }
    let added = call(&client, "mis__added_later", json!({})).await;
    assert_eq!(text_of(&added), "added later");
    close(client, shim).await;
}

// ------------------------------------------------------------------ tests

/// One `#[tokio::test]` per scenario and transport: `http::name` and `stdio::name`.
macro_rules! over_both_transports {
    ($($scenario:ident),* $(,)?) => {
        mod http {
            $(
                #[tokio::test]
                async fn $scenario() {
                    super::$scenario(super::Transport::Http).await;
                }
            )*
        }
        mod stdio {
            $(
                #[tokio::test]
                async fn $scenario() {
                    super::$scenario(super::Transport::Stdio).await;
                }
            )*
        }
    };
}

over_both_transports!(
    handshake_lists_and_calls_tools,
    progress_reaches_the_caller,
    sampling_round_trip,
    elicitation_round_trip,
    roots_come_from_the_editor,
    cancellation_reaches_the_backend,
    resource_updates_follow_subscriptions,
    tool_list_changes_are_announced,
);
