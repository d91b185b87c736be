//! The guard in front of `/mcp` (Host, Origin, token) and the body limit.

use super::*;

// --- The guard: Host ---------------------------------------------------------------------

#[tokio::test]
async fn loopback_hosts_are_allowed() {
    let app = guarded_app(options());
    for host in [
        format!("127.0.0.1:{PORT}"),
        format!("localhost:{PORT}"),
        format!("[::1]:{PORT}"),
        format!("LocalHost:{PORT}"),
    ] {
        assert_reaches_handler(&app, probe(&[("host", &host)])).await;
    }
}

#[tokio::test]
async fn localhost_evil_com_host_is_rejected() {
    let app = guarded_app(options());
    let host = format!("localhost.evil.com:{PORT}");
    let request = probe(&[("host", &host)]);
    assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
}

#[tokio::test]
async fn host_127_0_0_10_is_rejected() {
    let app = guarded_app(options());
    let host = format!("127.0.0.10:{PORT}");
    let request = probe(&[("host", &host)]);
    assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
}

#[tokio::test]
async fn evil_com_host_is_rejected() {
    let app = guarded_app(options());
    for host in ["evil.com", "evil.com:4242", "127.0.0.1.evil.com:4242"] {
        let request = probe(&[("host", host)]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
    }
}

#[tokio::test]
async fn loopback_host_with_another_port_is_rejected() {
    let app = guarded_app(options());
    for host in [
        "127.0.0.1:4243",
        "localhost:80",
        "localhost",
        "[::1]",
        "127.0.0.1",
    ] {
        let request = probe(&[("host", host)]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
    }
}

#[tokio::test]
async fn missing_host_is_rejected() {
    let app = guarded_app(options());
    assert_refused(&app, probe(&[]), StatusCode::FORBIDDEN, "forbidden_host").await;
}

#[tokio::test]
async fn two_host_headers_are_rejected() {
    let app = guarded_app(options());
    let good = loopback();
    let request = probe(&[("host", &good), ("host", "evil.com")]);
    assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
}

// --- The guard: Origin -------------------------------------------------------------------

#[tokio::test]
async fn missing_origin_is_allowed() {
    let app = guarded_app(options());
    assert_reaches_handler(&app, probe(&[("host", &loopback())])).await;
}

#[tokio::test]
async fn loopback_origins_are_allowed() {
    let app = guarded_app(options());
    for origin in [
        format!("http://127.0.0.1:{PORT}"),
        format!("http://localhost:{PORT}"),
        format!("http://[::1]:{PORT}"),
    ] {
        let request = probe(&[("host", &loopback()), ("origin", &origin)]);
        assert_reaches_handler(&app, request).await;
    }
}

#[tokio::test]
async fn null_origin_is_rejected() {
    let mut options = options();
    options.extra_origins = vec!["null".to_owned()];
    let app = guarded_app(options);
    let request = probe(&[("host", &loopback()), ("origin", "null")]);
    assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_origin").await;
}

#[tokio::test]
async fn foreign_origin_is_rejected() {
    let app = guarded_app(options());
    for origin in [
        "http://evil.com".to_owned(),
        format!("http://localhost.evil.com:{PORT}"),
        format!("http://127.0.0.10:{PORT}"),
        format!("https://localhost:{PORT}"),
        format!("http://localhost:{}", PORT + 1),
        "http://localhost".to_owned(),
        "tauri://localhost".to_owned(),
    ] {
        let request = probe(&[("host", &loopback()), ("origin", &origin)]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_origin").await;
    }
}

#[tokio::test]
async fn another_sites_page_is_rejected_even_without_origin() {
    let app = guarded_app(options());
    for site in ["cross-site", "same-site", "Cross-Site", ""] {
        let request = probe(&[("host", &loopback()), ("sec-fetch-site", site)]);
        assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_origin").await;
    }
    for site in ["same-origin", "none"] {
        let request = probe(&[("host", &loopback()), ("sec-fetch-site", site)]);
        assert_reaches_handler(&app, request).await;
    }
}

#[tokio::test]
async fn tauri_origin_is_allowed_when_configured() {
    let mut options = options();
    options.extra_origins = vec![
        "tauri://localhost".to_owned(),
        "http://tauri.localhost".to_owned(),
    ];
    let app = guarded_app(options);
    for origin in ["tauri://localhost", "http://tauri.localhost"] {
        let request = probe(&[("host", &loopback()), ("origin", origin)]);
        assert_reaches_handler(&app, request).await;
    }
    let request = probe(&[("host", &loopback()), ("origin", "tauri://evil")]);
    assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_origin").await;
}

#[tokio::test]
async fn cross_site_preflight_is_rejected_without_cors_headers() {
    let app = guarded_app(options());
    let request = with_headers(
        Method::OPTIONS,
        &[
            ("host", &loopback()),
            ("origin", "http://evil.com"),
            ("access-control-request-method", "POST"),
        ],
        "",
    );
    assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_origin").await;
}

// --- The guard: token --------------------------------------------------------------------

#[tokio::test]
async fn missing_token_is_unauthorized() {
    let app = guarded_app(token_options());
    let response = send(&app, probe(&[("host", &loopback())])).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        response.headers().get(header::WWW_AUTHENTICATE),
        Some(&HeaderValue::from_static("Bearer"))
    );
    assert_eq!(body_json(response).await["code"], "unauthorized");
}

#[tokio::test]
async fn wrong_token_is_unauthorized() {
    let app = guarded_app(token_options());
    for authorization in [
        "Bearer s3cret-tokeN",
        "Bearer s3cret-token-and-more",
        "Bearer ",
        "Basic s3cret-token",
        "s3cret-token",
    ] {
        let request = probe(&[("host", &loopback()), ("authorization", authorization)]);
        assert_refused(&app, request, StatusCode::UNAUTHORIZED, "unauthorized").await;
    }
}

#[tokio::test]
async fn right_token_is_allowed() {
    let app = guarded_app(token_options());
    for authorization in ["Bearer s3cret-token", "bearer s3cret-token"] {
        let request = probe(&[("host", &loopback()), ("authorization", authorization)]);
        assert_reaches_handler(&app, request).await;
    }
}

#[tokio::test]
async fn a_token_turned_on_changed_or_off_applies_to_the_next_request() {
    let token = EndpointToken::default();
    let app = guarded_app(HttpOptions {
        token: token.clone(),
        ..options()
    });
    let without = || probe(&[("host", &loopback())]);
    let with = |token: &str| {
        let authorization = format!("Bearer {token}");
        probe(&[("host", &loopback()), ("authorization", &authorization)])
    };
    assert_reaches_handler(&app, without()).await;
    assert!(token.set(Some("first-token".to_owned())));
    assert!(!token.set(Some("first-token".to_owned())), "no change");
    assert_refused(&app, without(), StatusCode::UNAUTHORIZED, "unauthorized").await;
    assert_reaches_handler(&app, with("first-token")).await;
    assert!(token.set(Some("second-token".to_owned())));
    assert_refused(
        &app,
        with("first-token"),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    assert_reaches_handler(&app, with("second-token")).await;
    assert!(token.set(None));
    assert_reaches_handler(&app, without()).await;
    assert_eq!(format!("{token:?}"), "EndpointToken(none)");
    token.set(Some("second-token".to_owned()));
    assert!(!format!("{token:?}").contains("second"));
}

#[tokio::test]
async fn foreign_host_is_rejected_before_the_token_is_looked_at() {
    let app = guarded_app(token_options());
    let request = probe(&[
        ("host", "evil.com"),
        ("authorization", "Bearer s3cret-token"),
    ]);
    assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
    let request = probe(&[("host", "evil.com")]);
    assert_refused(&app, request, StatusCode::FORBIDDEN, "forbidden_host").await;
}

#[test]
fn constant_time_eq_compares_whole_values() {
    assert!(constant_time_eq(b"abc", b"abc"));
    assert!(!constant_time_eq(b"abc", b"abd"));
    assert!(!constant_time_eq(b"abc", b"ab"));
    assert!(constant_time_eq(b"", b""));
}

// --- Body limit --------------------------------------------------------------------------

#[tokio::test]
async fn declared_oversized_body_is_rejected_with_413() {
    let app = guarded_app(HttpOptions {
        max_body_size: 100,
        ..options()
    });
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(200)
    );
    let length = body.len().to_string();
    let request = with_headers(
        Method::POST,
        &[("host", &loopback()), ("content-length", &length)],
        &body,
    );
    let response = send(&app, request).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let answer = body_json(response).await;
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message":
            format!("request body of {} bytes exceeds the limit of 100 bytes", body.len())}})
    );
}

#[tokio::test]
async fn undeclared_oversized_body_is_rejected_with_413() {
    let app = guarded_app(HttpOptions {
        max_body_size: 100,
        ..options()
    });
    let body = "x".repeat(101);
    let request = with_headers(Method::POST, &[("host", &loopback())], &body);
    let response = send(&app, request).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let answer = body_json(response).await;
    assert_eq!(answer["error"]["code"], -32600);
    assert_eq!(
        answer["error"]["message"],
        "request body of undeclared size exceeds the limit of 100 bytes"
    );
}
