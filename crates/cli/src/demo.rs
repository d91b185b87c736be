//! A small MCP server over stdio, run by `switchboard demo-server`.
//!
//! It gives the supervisor and its tests a real backend to drive: tools that echo, add, sleep
//! with progress and cancellation, fail, and crash on request, plus one resource and one prompt.
//! stdout carries only the protocol; everything else goes to stderr.

use std::time::Duration;

use anyhow::Context as _;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    handler::server::{
        router::{prompt::PromptRouter, tool::ToolRouter},
        wrapper::Parameters,
    },
    model::{
        CallToolResult, ContentBlock, Implementation, ListResourcesResult, PaginatedRequestParams,
        ProgressNotificationParam, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
        ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities, ServerConfig,
    },
    prompt, prompt_handler, prompt_router,
    service::{QuitReason, RequestContext, ServerInitializeError},
    tool, tool_handler, tool_router,
    transport::stdio_pipes,
};
use serde::Deserialize;

/// Runs the demo server on stdin/stdout until the client closes stdin.
pub(crate) async fn run() -> anyhow::Result<()> {
    tracing::info!("demo server listening on stdio");
    let service = match DemoServer::new().serve(stdio_pipes()).await {
        Ok(service) => service,
        // A client that goes away before the handshake is an ordinary way for us to stop.
        Err(ServerInitializeError::ConnectionClosed(context)) => {
            tracing::info!(%context, "client closed stdin before initializing");
            return Ok(());
        }
        Err(error) => return Err(error).context("MCP handshake with the client failed"),
    };
    let quit_reason = service
        .waiting()
        .await
        .context("demo server task panicked")?;
    match quit_reason {
        QuitReason::Closed => tracing::info!("demo server stopped: the client closed its end"),
        QuitReason::JoinError(error) => {
            tracing::info!(%error, "demo server stopped: its task failed")
        }
        _ => tracing::info!("demo server stopped"),
    }
    Ok(())
}

const SERVER_NAME: &str = "switchboard-demo";
const README_URI: &str = "demo://readme";
const README_MIME_TYPE: &str = "text/markdown";
const README_TEXT: &str = "\
# switchboard demo server

A small MCP server that ships inside the `switchboard` binary (`switchboard demo-server`).

- Tools: `echo`, `add`, `sleep` (progress and cancellation), `fail` (a tool error), `crash` (exits the process).
- Prompt: `greet`, which asks the model to say hello to `name`.
";
const DEFAULT_SLEEP_MS: u64 = 1000;
/// A day: long enough for any test, short enough that deadline arithmetic cannot overflow.
const MAX_SLEEP_MS: u64 = 24 * 60 * 60 * 1000;
const SLEEP_PROGRESS_STEPS: u32 = 10;
const DEFAULT_CRASH_CODE: i32 = 3;

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct EchoArgs {
    /// Text to send back.
    text: String,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct AddArgs {
    a: f64,
    b: f64,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct SleepArgs {
    /// How long to sleep, in milliseconds (default 1000).
    ms: Option<u64>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct FailArgs {
    /// Text of the error the tool reports.
    message: Option<String>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct CrashArgs {
    /// Exit code of the process (default 3).
    code: Option<i32>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

struct DemoServer {
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

impl DemoServer {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
            prompt_router: Self::prompt_router(),
        }
    }
}

#[tool_router]
impl DemoServer {
    #[tool(description = "Return `text` unchanged.")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Add two numbers and return the sum as text.")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }

    #[tool(
        description = "Sleep for `ms` milliseconds (default 1000), reporting progress in 10 steps when the request has a progress token. Stops early when cancelled."
    )]
    async fn sleep(
        &self,
        Parameters(SleepArgs { ms }): Parameters<SleepArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let total_ms = ms.unwrap_or(DEFAULT_SLEEP_MS);
        if total_ms > MAX_SLEEP_MS {
            return text_error(format!("ms must be at most {MAX_SLEEP_MS}"));
        }
        let progress_token = context.meta.get_progress_token();
        let started = tokio::time::Instant::now();
        for step in 1..=SLEEP_PROGRESS_STEPS {
            // Deadlines measured from the start keep the total on time however long sends take.
            let step_deadline = started
                + Duration::from_millis(
                    total_ms * u64::from(step) / u64::from(SLEEP_PROGRESS_STEPS),
                );
            tokio::select! {
                () = tokio::time::sleep_until(step_deadline) => {}
                () = context.ct.cancelled() => {
                    // rmcp does not send a response to a cancelled request, so this result
                    // only says what happened to whoever reads it in-process.
                    let elapsed_ms = started.elapsed().as_millis();
                    tracing::info!(elapsed_ms, "sleep cancelled by the client");
                    return text_error(format!("sleep cancelled after {elapsed_ms} ms"));
                }
            }
            let Some(progress_token) = &progress_token else {
                continue;
            };
            let progress = ProgressNotificationParam::new(progress_token.clone(), f64::from(step))
                .with_total(f64::from(SLEEP_PROGRESS_STEPS));
            // Progress is advisory: a client that cannot take it should not stop the sleep.
            if let Err(error) = context.peer.notify_progress(progress).await {
                tracing::warn!(%error, "could not send a progress notification");
            }
        }
        CallToolResult::success(vec![ContentBlock::text(format!("slept {total_ms} ms"))])
    }

    #[tool(description = "Always fail with a tool error (isError: true) carrying `message`.")]
    fn fail(&self, Parameters(FailArgs { message }): Parameters<FailArgs>) -> CallToolResult {
        text_error(message.unwrap_or_else(|| "the fail tool failed, as requested".to_owned()))
    }

    #[tool(description = "Exit the server process at once with exit code `code` (default 3).")]
    fn crash(&self, Parameters(CrashArgs { code }): Parameters<CrashArgs>) -> CallToolResult {
        let exit_code = code.unwrap_or(DEFAULT_CRASH_CODE);
        // Written directly rather than through tracing: stderr is unbuffered, so the line is
        // out before exit, and whoever reads our stderr can match it whatever the log format.
        eprintln!("demo-server: crashing on request (exit code {exit_code})");
        std::process::exit(exit_code)
    }
}

#[prompt_router]
impl DemoServer {
    #[prompt(description = "Ask the model to say hello to `name`.")]
    fn greet(&self, Parameters(GreetArgs { name }): Parameters<GreetArgs>) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            format!("Say hello to {name}."),
        )]
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_prompts()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Demo server for switchboard: call echo, add, sleep, fail or crash; read demo://readme.",
            )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let readme = Resource::new(README_URI, "readme")
            .with_description("What the demo server offers")
            .with_mime_type(README_MIME_TYPE);
        Ok(ListResourcesResult::with_all_items(vec![readme]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != README_URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource at {}", request.uri),
                Some(serde_json::json!({ "uri": request.uri })),
            ));
        }
        let contents =
            ResourceContents::text(README_TEXT, README_URI).with_mime_type(README_MIME_TYPE);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

fn text_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rmcp::{
        ClientHandler, RoleClient,
        model::{
            CallToolRequestParams, ErrorCode, GetPromptRequestParams, ProtocolVersion,
            ReadResourceRequestParams,
        },
        object,
        service::{NotificationContext, RunningService, ServiceError},
    };
    use tokio::sync::mpsc;

    use super::*;

    /// Both ends of an in-process session; dropping either end closes it.
    struct Session<C: ClientHandler> {
        _server: RunningService<RoleServer, DemoServer>,
        client: RunningService<RoleClient, C>,
    }

    async fn connect<C: ClientHandler>(client_handler: C) -> Session<C> {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let (server, client) = tokio::join!(
            DemoServer::new().serve(server_io),
            client_handler.serve(client_io)
        );
        Session {
            _server: server.expect("the server completes the handshake"),
            client: client.expect("the client completes the handshake"),
        }
    }

    /// A client that forwards every progress notification it receives to the test.
    struct ProgressRecorder {
        progress_tx: mpsc::UnboundedSender<ProgressNotificationParam>,
    }

    impl ClientHandler for ProgressRecorder {
        async fn on_progress(
            &self,
            params: ProgressNotificationParam,
            _context: NotificationContext<RoleClient>,
        ) {
            self.progress_tx
                .send(params)
                .expect("the test holds the receiver until the session ends");
        }
    }

    fn only_text(result: &CallToolResult) -> &str {
        match result.content.as_slice() {
            [content] => &content.as_text().expect("the content is text").text,
            other => panic!("expected one content block, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn handshake_names_the_server_and_the_newest_version_with_initialize() {
        let session = connect(()).await;
        let server_info = session
            .client
            .peer_info()
            .expect("the handshake stored server info");
        assert_eq!(server_info.protocol_version, ProtocolVersion::V_2025_11_25);
        let implementation = server_info
            .server_info
            .as_ref()
            .expect("the server names itself");
        assert_eq!(implementation.name, SERVER_NAME);
    }

    #[tokio::test]
    async fn tools_answer_with_text_and_fail_is_a_tool_error() {
        let session = connect(()).await;
        let mut tool_names: Vec<String> = (session.client.list_all_tools().await)
            .expect("tools/list succeeds")
            .into_iter()
            .map(|tool| tool.name.into_owned())
            .collect();
        tool_names.sort();
        assert_eq!(tool_names, ["add", "crash", "echo", "fail", "sleep"]);

        let echo = CallToolRequestParams::new("echo").with_arguments(object!({ "text": "hi" }));
        let echoed = session.client.call_tool(echo).await.expect("echo succeeds");
        assert_eq!(only_text(&echoed), "hi");
        assert_ne!(echoed.is_error, Some(true));

        let add = CallToolRequestParams::new("add").with_arguments(object!({ "a": 2, "b": 3 }));
        let sum = session.client.call_tool(add).await.expect("add succeeds");
        assert_eq!(only_text(&sum), "5");

        let fail =
            CallToolRequestParams::new("fail").with_arguments(object!({ "message": "boom" }));
        let failed = session
            .client
            .call_tool(fail)
            .await
            .expect("a tool error is still a result");
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(only_text(&failed), "boom");
    }

    #[tokio::test]
    async fn sleep_reports_ten_steps_of_progress() {
        let (progress_tx, mut progress_rx) = mpsc::unbounded_channel();
        let session = connect(ProgressRecorder { progress_tx }).await;
        let sleep = CallToolRequestParams::new("sleep").with_arguments(object!({ "ms": 50 }));
        let slept = session
            .client
            .call_tool(sleep)
            .await
            .expect("sleep succeeds");
        assert_eq!(only_text(&slept), "slept 50 ms");

        // Notifications are handled on their own tasks, so they may trail the response.
        for expected_step in 1..=SLEEP_PROGRESS_STEPS {
            let progress = tokio::time::timeout(Duration::from_secs(5), progress_rx.recv())
                .await
                .expect("progress arrives within 5 s")
                .expect("the session is still open");
            assert_eq!(progress.progress, f64::from(expected_step));
            assert_eq!(progress.total, Some(f64::from(SLEEP_PROGRESS_STEPS)));
        }
    }

    #[tokio::test]
    async fn readme_is_readable_and_other_uris_are_not_found() {
        let session = connect(()).await;
        let resources = session
            .client
            .list_all_resources()
            .await
            .expect("resources/list succeeds");
        let uris: Vec<&str> = resources
            .iter()
            .map(|resource| resource.uri.as_str())
            .collect();
        assert_eq!(uris, [README_URI]);

        let readme = (session.client)
            .read_resource(ReadResourceRequestParams::new(README_URI))
            .await
            .expect("the readme is readable");
        assert!(matches!(
            readme.contents.as_slice(),
            [ResourceContents::TextResourceContents { text, .. }] if text == README_TEXT
        ));

        let missing = (session.client)
            .read_resource(ReadResourceRequestParams::new("demo://missing"))
            .await
            .expect_err("an unknown uri is an error");
        assert!(
            matches!(&missing, ServiceError::McpError(error) if error.code == ErrorCode::RESOURCE_NOT_FOUND),
            "unexpected error: {missing:?}"
        );
    }

    #[tokio::test]
    async fn greet_prompt_says_hello_to_name() {
        let session = connect(()).await;
        let request =
            GetPromptRequestParams::new("greet").with_arguments(object!({ "name": "Ada" }));
        let prompt = session
            .client
            .get_prompt(request)
            .await
            .expect("prompts/get succeeds");
        let [message] = prompt.messages.as_slice() else {
            panic!("expected one message, got {:?}", prompt.messages);
        };
        assert_eq!(message.role, Role::User);
        assert_eq!(
            message.content.as_text().expect("the message is text").text,
            "Say hello to Ada."
        );
    }
}
