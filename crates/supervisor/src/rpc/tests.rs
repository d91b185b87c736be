//! The connection against a fake backend on the far end of in-memory pipes.

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, DuplexStream, Lines};

use super::*;
use crate::output::OutputLog;

const SECOND: Duration = Duration::from_secs(1);
/// The size of the in-memory pipes: a pipe's buffer on Linux.
const PIPE_BUFFER: usize = 64 * 1024;

/// The far end of a connection: what the connection wrote to the backend's stdin, and the
/// backend's stdout.
struct FakeBackend {
    stdin: Lines<BufReader<DuplexStream>>,
    stdout: DuplexStream,
}

impl FakeBackend {
    /// The next message the connection sent.
    async fn read(&mut self) -> serde_json::Value {
        let line = self.read_line().await;
        serde_json::from_str(&line).expect("the connection sends JSON")
    }

    /// The next message the connection sent, as it was written.
    async fn read_line(&mut self) -> String {
        self.stdin
            .next_line()
            .await
            .expect("reading a duplex pipe does not fail")
            .expect("the connection sent a line")
    }

    async fn write(&mut self, line: &str) {
        self.stdout
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("writing a duplex pipe does not fail");
    }
}

fn connect(max_message_size: usize) -> (Started, FakeBackend, Arc<OutputLog>) {
    let (our_stdin, their_stdin) = tokio::io::duplex(PIPE_BUFFER);
    let (their_stdout, our_stdout) = tokio::io::duplex(PIPE_BUFFER);
    let log = Arc::new(OutputLog::new(100, 100_000));
    let options = ConnectionOptions {
        max_message_size,
        log: log.run(1),
    };
    let started = Connection::start("fake", our_stdin, our_stdout, options);
    let backend = FakeBackend {
        stdin: BufReader::new(their_stdin).lines(),
        stdout: their_stdout,
    };
    (started, backend, log)
}

fn raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).expect("test JSON is valid")
}

fn spawn_request(
    connection: &Connection,
    method: &'static str,
    timeout: Duration,
) -> tokio::task::JoinHandle<Result<Box<RawValue>, RpcError>> {
    let connection = connection.clone();
    tokio::spawn(async move {
        connection
            .request(&Method::parse(method), None, timeout)
            .await
    })
}

fn noise(log: &OutputLog) -> Vec<String> {
    log.tail(100)
        .into_iter()
        .filter(|line| line.stream == OutputStream::StdoutNoise)
        .map(|line| line.text)
        .collect()
}

#[tokio::test]
async fn answers_reach_their_requests_by_our_own_ids_in_any_order() {
    let (started, mut backend, _log) = connect(1 << 20);
    let first = spawn_request(&started.connection, "tools/list", SECOND);
    let sent_first = backend.read().await;
    let second = spawn_request(&started.connection, "prompts/list", SECOND);
    let sent_second = backend.read().await;
    assert_eq!(sent_first["id"], 1);
    assert_eq!(sent_first["method"], "tools/list");
    assert_eq!(sent_second["id"], 2);
    assert_eq!(sent_second["method"], "prompts/list");

    backend
        .write(r#"{"jsonrpc":"2.0","id":2,"result":{"prompts":[]}}"#)
        .await;
    backend
        .write(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#)
        .await;
    let first = first.await.expect("no panic").expect("an answer");
    let second = second.await.expect("no panic").expect("an answer");
    assert_eq!(first.get(), r#"{"tools":[]}"#);
    assert_eq!(second.get(), r#"{"prompts":[]}"#);
    assert_eq!(started.connection.pending_count(), 0);
}

#[tokio::test]
async fn an_error_response_fails_the_request_with_the_backends_error() {
    let (started, mut backend, _log) = connect(1 << 20);
    let call = spawn_request(&started.connection, "tools/call", SECOND);
    let id = backend.read().await["id"].clone();
    backend
        .write(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"no such tool"}}}}"#
        ))
        .await;
    let error = call.await.expect("no panic").expect_err("an error");
    let RpcError::Remote { method, error, .. } = &error else {
        panic!("expected the backend's error, got {error:?}");
    };
    assert_eq!(method.as_str(), "tools/call");
    assert_eq!(error.code, -32602);
    assert_eq!(error.message, "no such tool");
}

#[tokio::test(start_paused = true)]
async fn a_request_that_times_out_is_cancelled_at_the_backend() {
    let (started, mut backend, _log) = connect(1 << 20);
    let call = spawn_request(&started.connection, "tools/call", 5 * SECOND);
    let id = backend.read().await["id"].clone();

    let error = call.await.expect("no panic").expect_err("no answer came");
    assert!(
        matches!(error, RpcError::Timeout { timeout, .. } if timeout == 5 * SECOND),
        "{error:?}"
    );
    let code = error.to_error_object().code;
    assert_eq!(code, wire::jsonrpc::REQUEST_TIMEOUT);
    assert_ne!(
        code,
        wire::jsonrpc::RESOURCE_NOT_FOUND,
        "a timeout has a code of its own, not MCP's -32002 for a missing resource"
    );
    let cancelled = backend.read().await;
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], id);
    assert_eq!(cancelled["params"]["reason"], "timeout");
    assert_eq!(started.connection.pending_count(), 0);

    // A late answer is dropped; the next request gets its own.
    backend
        .write(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#))
        .await;
    let next = spawn_request(&started.connection, "ping", SECOND);
    let next_id = backend.read().await["id"].clone();
    assert_ne!(next_id, id);
    backend
        .write(&format!(
            r#"{{"jsonrpc":"2.0","id":{next_id},"result":{{"n":2}}}}"#
        ))
        .await;
    let answer = next.await.expect("no panic").expect("an answer");
    assert_eq!(answer.get(), r#"{"n":2}"#);
}

#[tokio::test]
async fn progress_reaches_its_request_before_the_answer() {
    let (mut started, mut backend, _log) = connect(1 << 20);
    let (sender, mut progress) = mpsc::unbounded_channel();
    let connection = started.connection.clone();
    let call = tokio::spawn(async move {
        let sink = ProgressSink {
            token: r#""tok""#.to_owned(),
            sender,
        };
        connection
            .request_for_client(
                &Method::ToolsCall,
                None,
                SECOND,
                Some(sink),
                ClientMeta::default(),
            )
            .await
    });
    let id = backend.read().await["id"].clone();
    for step in [1, 2] {
        backend
            .write(&format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"tok","progress":{step}}}}}"#
            ))
            .await;
    }
    backend
        .write(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"other","progress":1}}"#)
        .await;
    backend
        .write(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#))
        .await;
    call.await.expect("no panic").expect("an answer");

    let delivered: Vec<String> = std::iter::from_fn(|| progress.try_recv().ok())
        .map(|params| params.get().to_owned())
        .collect();
    assert_eq!(
        delivered,
        [
            r#"{"progressToken":"tok","progress":1}"#,
            r#"{"progressToken":"tok","progress":2}"#
        ]
    );
    // Progress no request asked for goes to the owner like any other notification.
    let Some(Incoming::Notification { method, params }) = started.incoming.recv().await else {
        panic!("expected the unclaimed progress notification");
    };
    assert_eq!(method.as_str(), "notifications/progress");
    assert_eq!(
        params.expect("params").get(),
        r#"{"progressToken":"other","progress":1}"#
    );
}

#[tokio::test]
async fn notifications_and_requests_from_the_backend_arrive_in_order_and_can_be_answered() {
    let (mut started, mut backend, _log) = connect(1 << 20);
    backend
        .write(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
        .await;
    backend
        .write(r#"{"jsonrpc":"2.0","id":"s-1","method":"roots/list","params":{}}"#)
        .await;

    let Some(Incoming::Notification { method, params }) = started.incoming.recv().await else {
        panic!("expected a notification first");
    };
    assert_eq!(method.as_str(), "notifications/tools/list_changed");
    assert!(params.is_none());
    let Some(Incoming::Request { id, method, params }) = started.incoming.recv().await else {
        panic!("expected the request next");
    };
    assert_eq!(id.get(), r#""s-1""#);
    assert_eq!(method.as_str(), "roots/list");
    assert_eq!(params.expect("params").get(), "{}");

    started
        .connection
        .respond(&id, Ok(&raw(r#"{"roots":[]}"#)))
        .await
        .expect("the connection is open");
    let answer = backend.read().await;
    assert_eq!(answer["id"], "s-1");
    assert_eq!(answer["result"], serde_json::json!({ "roots": [] }));
}

#[tokio::test]
async fn a_ping_from_the_backend_is_answered_by_the_connection() {
    let (_started, mut backend, _log) = connect(1 << 20);
    backend
        .write(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#)
        .await;
    let answer = backend.read().await;
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["result"], serde_json::json!({}));
}

#[tokio::test]
async fn close_wakes_every_waiter_with_its_reason_and_closes_stdin() {
    let (started, mut backend, _log) = connect(1 << 20);
    let calls: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|method| spawn_request(&started.connection, method, 60 * SECOND))
        .collect();
    for _ in 0..3 {
        backend.read().await;
    }
    assert_eq!(started.connection.pending_count(), 3);

    let reason = CloseReason::Exited(ExitDescription {
        code: Some(3),
        signal: None,
        disconnected: None,
    });
    started.connection.close(reason.clone());
    for call in calls {
        let error = call.await.expect("no panic").expect_err("closed");
        assert!(
            matches!(&error, RpcError::Closed { reason: got, .. } if *got == reason),
            "{error:?}"
        );
    }
    let later = started
        .connection
        .request(&Method::parse("d"), None, SECOND)
        .await
        .expect_err("closed");
    assert!(
        matches!(&later, RpcError::Closed { reason: got, .. } if *got == reason),
        "{later:?}"
    );
    let end = backend
        .stdin
        .next_line()
        .await
        .expect("reading a duplex pipe does not fail");
    assert_eq!(end, None, "stdin is closed after close");
}

#[tokio::test]
async fn end_of_file_on_stdout_closes_the_read_side() {
    let (mut started, backend, _log) = connect(1 << 20);
    drop(backend.stdout);
    started.stdout_closed.cancelled().await;
    assert!(started.incoming.recv().await.is_none());
}

#[tokio::test]
async fn garbage_and_oversized_lines_are_skipped_without_losing_the_next_message() {
    let (started, mut backend, log) = connect(256);
    let big = spawn_request(&started.connection, "resources/read", SECOND);
    let big_id = backend.read().await["id"].clone();
    let small = spawn_request(&started.connection, "tools/list", SECOND);
    let small_id = backend.read().await["id"].clone();

    backend.write("Server listening, have fun").await;
    let padding = "x".repeat(1000);
    backend
        .write(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{padding}"}}}}"#
        ))
        .await;
    backend
        .write(&format!(
            r#"{{"jsonrpc":"2.0","id":{big_id},"result":{{"text":"{padding}"}}}}"#
        ))
        .await;
    backend
        .write(&format!(
            r#"{{"jsonrpc":"2.0","id":{small_id},"result":{{"tools":[]}}}}"#
        ))
        .await;

    let error = big.await.expect("no panic").expect_err("too large");
    assert!(
        matches!(error, RpcError::TooLarge { limit: 256, len, .. } if len > 1000),
        "{error:?}"
    );
    let answer = small.await.expect("no panic").expect("an answer");
    assert_eq!(answer.get(), r#"{"tools":[]}"#);
    let noise = noise(&log);
    assert_eq!(noise[0], "Server listening, have fun");
    assert!(noise[1].starts_with("dropped a ") && !noise[1].ends_with("its request failed"));
    assert!(noise[2].ends_with("; its request failed"), "{noise:?}");
    assert_eq!(noise.len(), 3);
}

#[tokio::test]
async fn the_stateless_envelope_goes_into_requests_only_and_keeps_what_the_caller_sent() {
    let (started, mut backend, _log) = connect(1 << 20);
    let connection = started.connection.clone();
    connection.set_envelope(Some(Arc::new(vec![
        (meta::PROTOCOL_VERSION, raw(r#""2026-07-28""#)),
        (meta::CLIENT_CAPABILITIES, raw("{}")),
    ])));
    let params = r#"{"name":"echo","_meta":{"progressToken":7},"arguments":{"x": 1.0}}"#;
    let call = tokio::spawn(async move {
        let capabilities = raw(r#"{"sampling":{}}"#);
        let client = ClientMeta {
            capabilities: Some(&capabilities),
            log_level: None,
            call: Some(41),
        };
        connection
            .request_for_client(&Method::ToolsCall, Some(&raw(params)), SECOND, None, client)
            .await
    });
    assert_eq!(
        backend.read_line().await,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7},"arguments":{"x": 1.0}}}"#
    );
    // Which call the request is part of is known while it waits, and only then.
    assert_eq!(started.connection.call_of(1), Some(41));
    backend
        .write(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)
        .await;
    call.await.expect("no panic").expect("an answer");
    assert_eq!(started.connection.call_of(1), None);

    let cancelled = raw(r#"{"requestId":1}"#);
    started
        .connection
        .notify(&Method::Cancelled, Some(&cancelled))
        .await
        .expect("sent");
    assert_eq!(
        backend.read_line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#
    );

    started.connection.set_envelope(None);
    let session_era = spawn_request(&started.connection, "ping", SECOND);
    assert_eq!(
        backend.read_line().await,
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#
    );
    drop(session_era);
}

#[tokio::test]
async fn lines_the_pipe_cannot_take_at_once_reach_the_backend_whole_and_in_turn() {
    let (started, mut backend, _log) = connect(1 << 20);
    // Each request is several times the pipe's buffer, so it waits for the backend to read,
    // while the next one waits its turn and the backend's pings are still answered.
    let big = |fill: &str| raw(&format!(r#"{{"text":"{}"}}"#, fill.repeat(4 * PIPE_BUFFER)));
    let mut requests = Vec::new();
    for fill in ["a", "b", "c"] {
        let connection = started.connection.clone();
        let params = big(fill);
        requests.push(tokio::spawn(async move {
            connection
                .request(&Method::ToolsCall, Some(&params), 10 * SECOND)
                .await
        }));
        tokio::task::yield_now().await;
    }
    backend
        .write(r#"{"jsonrpc":"2.0","id":"ping-1","method":"ping"}"#)
        .await;
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let message = backend.read().await;
        match message["method"].as_str() {
            Some("tools/call") => {
                let text = message["params"]["text"].as_str().unwrap();
                assert_eq!(text.len(), 4 * PIPE_BUFFER);
                assert!(text.bytes().all(|byte| byte == text.as_bytes()[0]));
                seen.push(text[..1].to_owned());
                backend
                    .write(&format!(
                        r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#,
                        message["id"]
                    ))
                    .await;
            }
            _ => {
                assert_eq!(message["id"], "ping-1", "{message}");
                seen.push("ping".to_owned());
            }
        }
    }
    let calls: Vec<&String> = seen.iter().filter(|seen| *seen != "ping").collect();
    assert_eq!(calls, ["a", "b", "c"], "{seen:?}");
    for request in requests {
        assert!(request.await.unwrap().is_ok());
    }
}
