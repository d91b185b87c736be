//! Signing in to a remote server with a real authorization server (`oidc-provider`,
//! `tests/auth/oidc_server.mjs`) in front of a real MCP server that checks every token
//! (`tests/backends/remote_server.py --auth`), and the real Secret Service keeping the tokens:
//! discovery, registration, PKCE and the resource indicator, the callback, a token refreshed past
//! its lifetime, tokens that survive a restart, and a sign-in that stops working, which editors
//! learn of as a tool error naming what to do. The browser's part is played by
//! `tests/auth/sign_in.mjs` here, and by Chromium in the dashboard's tests.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::remote::remote_entry;
use crate::support::*;

/// The authorization server and the MCP server it protects; the OAuth server on a port of its
/// own that a restart keeps.
pub(crate) struct Protected {
    pub(crate) oidc: Fixture,
    oidc_port: u16,
    pub(crate) remote: Fixture,
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

fn start_oidc(port: u16, access_ttl: &str) -> Fixture {
    oidc_server(&["--port", &port.to_string(), "--access-ttl", access_ttl])
}

/// An authorization server whose access tokens live `access_ttl` seconds, and a remote MCP
/// server that accepts only its tokens.
pub(crate) fn protected(access_ttl: &str) -> Protected {
    let oidc_port = free_port();
    let oidc = start_oidc(oidc_port, access_ttl);
    // `=`: a secret may start with `-`.
    let client = oidc.ready["introspection"]["client_id"]
        .as_str()
        .expect("a client id");
    let secret = oidc.ready["introspection"]["client_secret"]
        .as_str()
        .expect("a client secret");
    let remote = remote_server(&[
        "--auth",
        &oidc.field("issuer"),
        &format!("--introspection-client={client}"),
        &format!("--introspection-secret={secret}"),
    ]);
    Protected {
        oidc,
        oidc_port,
        remote,
    }
}

/// Completes the sign-in at `url` as the person `login` would in a browser.
fn sign_in_as(url: &str, login: &str) -> Value {
    let output = Command::new("node")
        .arg(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/auth/sign_in.mjs"))
        .args([url, "--login", login])
        .output()
        .expect("node runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("a JSON line")
}

/// The path of the callback of the authorization server `issuer`: 16 hex digits of the
/// SHA-256 of its issuer.
fn callback_path(issuer: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(issuer.as_bytes());
    let id: String = digest[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("/oauth/callback/{id}")
}

async fn until_state(serve: &ServeProcess, name: &str, state: &str) -> Value {
    eventually(&format!("{name} is {state}"), EVENT_LIMIT, || async {
        let entry = serve.backend_summary(name).await;
        match entry["state"] == state {
            true => Ok(entry),
            false => Err(entry),
        }
    })
    .await
}

async fn whoami(serve: &ServeProcess) -> Value {
    let mcp = McpHttp::new(&serve.url()).with_token(SERVE_TOKEN);
    let session = mcp.open_session("sign-in-test").await.expect("a session");
    mcp.call_tool(&session, 1, "remote__whoami", json!({}))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_is_kept_refreshed_survives_a_restart_and_its_loss_is_told_to_editors() {
    let service = keychain_service();
    let Protected {
        oidc,
        oidc_port,
        remote,
    } = protected("4");
    let url = remote.field("url");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, remote_entry("remote", &url, "")).expect("write");
    let start = || {
        ServeOptions::in_dir(dir.path(), &config)
            .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
            .start()
    };
    let mut serve = start();

    // Not signed in: the server refuses, and the backend waits for a person.
    let waiting = until_state(&serve, "remote", "needs_sign_in").await;
    assert!(
        waiting["last_error"]
            .as_str()
            .is_some_and(|error| error.contains("choose \"Sign in to remote\"")),
        "{waiting}"
    );

    let begun = serve.api_post("/api/backends/remote/sign-in").await;
    let authorize = reqwest::Url::parse(begun["url"].as_str().expect("a URL")).expect("a URL");
    let query: std::collections::HashMap<String, String> =
        authorize.query_pairs().into_owned().collect();
    assert!(
        authorize.as_str().starts_with(&oidc.field("issuer")),
        "{authorize}"
    );
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(
        query["resource"], url,
        "the resource indicator names the server"
    );
    let callback = serve.http_url(&callback_path(&oidc.field("issuer")));
    assert_eq!(
        query["redirect_uri"], callback,
        "a callback per authorization server, on Switchboard's own endpoint"
    );
    assert!(query["scope"].contains("mcp:tools"), "{query:?}");

    // A forged callback is refused and changes nothing.
    let forged = reqwest::get(format!("{callback}?code=x&state=forged"))
        .await
        .expect("an answer");
    assert_eq!(forged.status(), 400);
    assert!(
        forged
            .text()
            .await
            .expect("a page")
            .contains("unknown or has expired")
    );

    let back = sign_in_as(authorize.as_str(), "ada");
    assert_eq!(back["status"], 200, "{back}");
    assert!(
        back["body"]
            .as_str()
            .is_some_and(|body| body.contains("Signed in to <b>remote</b>")),
        "{back}"
    );
    until_state(&serve, "remote", "ready").await;
    assert_eq!(first_text(&whoami(&serve).await), "ada");

    // The access token lives 4 s; well past that, calls still go through, on a refreshed one.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(first_text(&whoami(&serve).await), "ada");
    assert!(serve.log().contains("refreshed its access token"));
    assert!(
        !serve.log().to_lowercase().contains("bearer "),
        "no token in the log"
    );

    // The tokens are in the keychain: a new Switchboard is signed in from the start.
    serve.stop();
    let serve = start();
    until_state(&serve, "remote", "ready").await;
    assert_eq!(first_text(&whoami(&serve).await), "ada");

    // Removed, it leaves no sign-in behind: put back, it asks for one again.
    let response = serve
        .client()
        .delete(serve.http_url("/api/servers/remote"))
        .bearer_auth(SERVE_TOKEN)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), 200);
    eventually("the server gone", EVENT_LIMIT, || async {
        let list = serve.api_get("/api/backends").await;
        match list.as_array().is_some_and(|list| list.is_empty()) {
            true => Ok(()),
            false => Err(list),
        }
    })
    .await;
    std::fs::write(&config, remote_entry("remote", &url, "")).expect("write");
    serve.api_post("/api/config/reload").await;
    until_state(&serve, "remote", "needs_sign_in").await;
    let begun = serve.api_post("/api/backends/remote/sign-in").await;
    let back = sign_in_as(begun["url"].as_str().expect("a URL"), "ada");
    assert_eq!(back["status"], 200, "{back}");
    until_state(&serve, "remote", "ready").await;

    // The authorization server forgets every grant (a restart of it): once the access token
    // has expired, no refresh works, and an editor's call says what to do instead of a 401.
    drop(oidc);
    let _oidc = start_oidc(oidc_port, "4");
    let told = eventually("a call says to sign in again", EVENT_LIMIT, || async {
        let result = whoami(&serve).await;
        match result["isError"] == true {
            true => Ok(result),
            false => Err(result),
        }
    })
    .await;
    assert!(
        first_text(&told).contains("remote needs a sign-in: open Switchboard's dashboard"),
        "{told}"
    );
    until_state(&serve, "remote", "needs_sign_in").await;
    drop(remote);
}

/// `tests/auth/malicious_server.py MODE`: a protected resource whose authorization server lies.
fn malicious_server(mode: &str, claimed_issuer: &str) -> Fixture {
    let mut command = Command::new(python());
    command
        .arg(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/auth/malicious_server.py"),
        )
        .args([mode, claimed_issuer]);
    Fixture::start(command)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_servers_that_lie_are_refused_and_the_honest_one_still_signs_in() {
    let service = keychain_service();
    let Protected { oidc, remote, .. } = protected("3600");
    let issuer = oidc.field("issuer");
    let liars = [
        (
            "wrong_issuer",
            malicious_server("wrong-issuer", &issuer),
            "names the issuer",
        ),
        (
            "plain",
            malicious_server("plain-endpoint", &issuer),
            "is not an https:// URL",
        ),
        (
            "redirect",
            malicious_server("redirect", &issuer),
            "redirects elsewhere",
        ),
    ];
    let mut config = remote_entry("remote", &remote.field("url"), "");
    for (name, liar, _) in &liars {
        config += &remote_entry(
            name,
            &liar.field("url"),
            "oauth = { client_id = \"switchboard\" }",
        );
    }
    // The honest server, for a client whose secret belongs to another authorization server.
    config += &remote_entry(
        "pinned",
        &remote.field("url"),
        "oauth = { client_id = \"switchboard\", client_secret = \"s\", issuer = \"https://elsewhere.example\" }",
    );
    let serve = ServeOptions::new(&config)
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
        .start();
    for (name, _, why) in &liars {
        until_state(&serve, name, "needs_sign_in").await;
        let (status, answer) = serve
            .api_post_body(&format!("/api/backends/{name}/sign-in"), "{}")
            .await;
        assert_eq!(status, 502, "{name}: {answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(why) && message.contains("refused"),
            "{name}: {answer}"
        );
    }
    // The secret goes nowhere but to the authorization server it is pinned to.
    until_state(&serve, "pinned", "needs_sign_in").await;
    let (status, answer) = serve
        .api_post_body("/api/backends/pinned/sign-in", "{}")
        .await;
    assert_eq!(status, 502, "{answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`oauth.issuer` pins") && message.contains("refused"),
        "{answer}"
    );
    // The honest one still signs in, beside them.
    let begun = serve.api_post("/api/backends/remote/sign-in").await;
    let back = sign_in_as(begun["url"].as_str().expect("a URL"), "bob");
    assert_eq!(back["status"], 200, "{back}");
    until_state(&serve, "remote", "ready").await;
    assert_eq!(first_text(&whoami(&serve).await), "bob");
}

/// An address of this machine's that is not loopback: where a remote server is not "on this
/// machine" to Switchboard, though it is.
fn outward_address() -> std::net::IpAddr {
    // A UDP socket "connected" to an outside address sends nothing, and is bound to the
    // address the system would send from.
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").expect("a UDP socket");
    socket
        .connect("192.0.2.1:9")
        .expect("this test needs a network interface besides loopback (and a route)");
    let address = socket.local_addr().expect("an address").ip();
    assert!(!address.is_loopback(), "{address}");
    address
}

/// A listener on this machine's loopback that counts the connections it gets.
struct Trap {
    url: String,
    connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

fn trap() -> Trap {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let url = format!(
        "127.0.0.1:{}",
        listener.local_addr().expect("an address").port()
    );
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = connections.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    Trap { url, connections }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_that_points_into_this_machine_is_refused_and_reaches_nothing_there() {
    let service = keychain_service();
    let address = outward_address().to_string();
    let trap = trap();
    let trap_port = trap.url.rsplit(':').next().unwrap_or_default().to_owned();
    // oidc-provider in front of a protected resource on the same origin, on an address that is
    // not loopback, with one step of discovery pointed at a listener on loopback: blind SSRF
    // into this machine, unless Switchboard refuses.
    let pointed = [
        (
            "challenge",
            format!("resource_metadata=http://{}/prm", trap.url),
        ),
        (
            "named",
            format!("authorization_servers=http://{}", trap.url),
        ),
        (
            "by_name",
            format!("authorization_servers=https://localhost:{trap_port}"),
        ),
        (
            "registration",
            format!("registration_endpoint=http://{}/reg", trap.url),
        ),
        (
            "token",
            format!("token_endpoint=https://{}/token", trap.url),
        ),
    ];
    let servers: Vec<(&str, Fixture)> = pointed
        .iter()
        .map(|(name, point)| {
            let fixture = oidc_server(&[
                "--host",
                &address,
                "--protected-resource",
                &format!("--point={point}"),
            ]);
            (*name, fixture)
        })
        .collect();
    let mut config = String::new();
    for (name, fixture) in &servers {
        config += &remote_entry(name, &fixture.field("url"), "");
    }
    let serve = ServeOptions::new(&config)
        .env("SWITCHBOARD_KEYCHAIN_SERVICE", &service)
        .start();
    for (name, _) in &servers {
        until_state(&serve, name, "needs_sign_in").await;
        let (status, answer) = serve
            .api_post_body(&format!("/api/backends/{name}/sign-in"), "{}")
            .await;
        assert_eq!(status, 502, "{name}: {answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        // Refused for the URL that points at the listener, before any request to it.
        assert!(
            message.contains(&format!(":{trap_port}/"))
                && message.contains("refused")
                && (message.contains("is on this machine") || message.contains("not an https://")),
            "{name}: {answer}"
        );
    }
    assert_eq!(
        trap.connections.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "no request reached the listener on loopback"
    );
}
