//! Who may ask: DNS rebinding (Host and Origin), each endpoint's own token, and cross-site
//! requests riding on the dashboard cookie.

use crate::support::*;

use super::{
    Expect, INITIALIZE, MCP_TOKEN, api_list, backend, bearer, check_case, check_matrix,
    mcp_initialize, other_port, request, start,
};

#[tokio::test]
async fn dns_rebinding_hosts_are_refused_and_loopback_names_served() {
    let serve = start("info");
    let port = serve.port();
    let served = [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        // Bound to 127.0.0.1, but a client that names the loopback by its IPv6 address is on
        // this machine all the same, and no foreign page can have that host.
        format!("[::1]:{port}"),
        // Host names are case-insensitive.
        format!("LocalHost:{port}"),
    ];
    let refused = [
        format!("localhost.evil.com:{port}"),
        format!("127.0.0.10:{port}"),
        format!("evil.com:{port}"),
        "evil.com".to_owned(),
        "127.0.0.1".to_owned(),
        "[::1]".to_owned(),
        format!("localhost:{}", other_port(port)),
        format!("0.0.0.0:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        format!("127.0.0.1:{port}.evil.com"),
    ];
    let forbidden = Expect::Refused(403, "forbidden_host");
    let mut cases: Vec<(String, Vec<String>, Expect)> = Vec::new();
    for (hosts, expect) in [(&served[..], Expect::Served), (&refused[..], forbidden)] {
        for value in hosts {
            cases.push((
                format!("Host {value:?}"),
                vec![format!("Host: {value}")],
                expect,
            ));
        }
    }
    cases.push(("no Host".to_owned(), Vec::new(), forbidden));
    let two = vec![
        format!("Host: 127.0.0.1:{port}"),
        "Host: evil.com".to_owned(),
    ];
    cases.push(("two Host headers".to_owned(), two, forbidden));
    check_matrix(port, &cases).await;
}

#[tokio::test]
async fn foreign_origins_are_refused_and_own_or_absent_ones_served() {
    let serve = start("info");
    let port = serve.port();
    let served = [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ];
    let refused = [
        // A sandboxed frame or a file:// page.
        "null".to_owned(),
        "http://evil.com".to_owned(),
        format!("http://localhost.evil.com:{port}"),
        format!("http://127.0.0.10:{port}"),
        format!("https://127.0.0.1:{port}"),
        format!("http://localhost:{}", other_port(port)),
        format!("http://127.0.0.1:{port}/"),
        String::new(),
    ];
    // Browsers send Sec-Fetch-Site where they send no Origin: `none` for a typed address.
    let sites = [
        ("none", Expect::Served),
        ("same-origin", Expect::Served),
        ("cross-site", Expect::Refused(403, "forbidden_origin")),
        // Another port of localhost is the same site, and a foreign page all the same.
        ("same-site", Expect::Refused(403, "forbidden_origin")),
    ];
    let host = format!("Host: 127.0.0.1:{port}");
    let forbidden = Expect::Refused(403, "forbidden_origin");
    let mut cases = vec![(
        "no Origin (editors, curl)".to_owned(),
        vec![host.clone()],
        Expect::Served,
    )];
    for (origins, expect) in [(&served[..], Expect::Served), (&refused[..], forbidden)] {
        for value in origins {
            let headers = vec![host.clone(), format!("Origin: {value}")];
            cases.push((format!("Origin {value:?}"), headers, expect));
        }
    }
    for (site, expect) in sites {
        let headers = vec![host.clone(), format!("Sec-Fetch-Site: {site}")];
        cases.push((format!("Sec-Fetch-Site {site}"), headers, expect));
    }
    let own = format!("Origin: {}", served[0]);
    let headers = vec![
        host.clone(),
        own.clone(),
        "Sec-Fetch-Site: same-origin".to_owned(),
    ];
    cases.push((
        "own Origin, same-origin".to_owned(),
        headers,
        Expect::Served,
    ));
    let headers = vec![host.clone(), own, "Origin: http://evil.com".to_owned()];
    cases.push(("two Origin headers".to_owned(), headers, forbidden));
    check_matrix(port, &cases).await;
}

#[tokio::test]
async fn each_endpoint_takes_its_own_token_only() {
    let serve = start("info");
    let port = serve.port();
    let link = serve.dashboard_link();
    let (_, key) = link.split_once("#key=").expect("the key in the link");
    let key = key.to_owned();
    let host = format!("Host: 127.0.0.1:{port}");
    let unauthorized = Expect::Refused(401, "unauthorized");
    let with = |line: String| vec![host.clone(), line];
    let api_cases = [
        ("no credentials", vec![host.clone()], unauthorized),
        (
            "a wrong token",
            with(bearer("wrong-token-0123456789abcdef")),
            unauthorized,
        ),
        (
            "the dashboard token",
            with(bearer(SERVE_TOKEN)),
            Expect::Served,
        ),
        (
            "a lower-case scheme",
            with(format!("Authorization: bearer {SERVE_TOKEN}")),
            Expect::Served,
        ),
        (
            "a longer token",
            with(bearer(&format!("{SERVE_TOKEN}x"))),
            unauthorized,
        ),
        (
            "a shorter token",
            with(bearer(&SERVE_TOKEN[..SERVE_TOKEN.len() - 1])),
            unauthorized,
        ),
        (
            "Basic",
            with(format!("Authorization: Basic {SERVE_TOKEN}")),
            unauthorized,
        ),
        ("the /mcp token", with(bearer(MCP_TOKEN)), unauthorized),
        ("the dashboard key", with(bearer(&key)), Expect::Served),
        (
            "the token as a cookie",
            with(format!("Cookie: switchboard_token={SERVE_TOKEN}")),
            unauthorized,
        ),
        (
            "the key as a cookie",
            with(format!("Cookie: theme=dark; switchboard_key={key}")),
            unauthorized,
        ),
    ];
    let mut failures = Vec::new();
    for (what, headers, expect) in &api_cases {
        let reply = exchange(port, &api_list(headers), "").await;
        check_case(&mut failures, &format!("/api, {what}"), *expect, &reply);
    }
    let in_query = request(
        &format!("GET /api/backends?token={SERVE_TOKEN} HTTP/1.1"),
        std::slice::from_ref(&host),
    );
    let reply = exchange(port, &in_query, "").await;
    check_case(
        &mut failures,
        "/api, the token in the query",
        unauthorized,
        &reply,
    );

    let mcp_cases = [
        ("no credentials", vec![host.clone()], unauthorized),
        (
            "a wrong token",
            with(bearer("wrong-token-0123456789abcdef")),
            unauthorized,
        ),
        (
            "the dashboard token",
            with(bearer(SERVE_TOKEN)),
            unauthorized,
        ),
        ("the dashboard key", with(bearer(&key)), unauthorized),
        (
            "the API token as a cookie",
            with(format!("Cookie: switchboard_token={SERVE_TOKEN}")),
            unauthorized,
        ),
        ("the /mcp token", with(bearer(MCP_TOKEN)), Expect::Served),
    ];
    for (what, headers, expect) in &mcp_cases {
        let reply = exchange(port, &mcp_initialize(headers), INITIALIZE).await;
        check_case(&mut failures, &format!("/mcp, {what}"), *expect, &reply);
        if reply.status == 401 && reply.header("www-authenticate") != Some("Bearer") {
            failures.push(format!(
                "/mcp, {what}: a 401 names the Bearer scheme: {reply:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn a_cross_site_request_changes_nothing() {
    let serve = start("info");
    let port = serve.port();
    let before = backend(port, "mis").await;
    assert_eq!(before["state"], "ready");
    // Even a request that carries the credential (which no form can) is refused.
    let stop = format!(
        "POST /api/backends/mis/stop HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{}",
        bearer(SERVE_TOKEN)
    );
    let form = "Content-Type: application/x-www-form-urlencoded";
    let json = "Content-Type: application/json";
    let foreign = Expect::Refused(403, "forbidden_origin");
    let not_json = Expect::Refused(415, "bad_request");
    let cases: [(&str, &[&str], Expect); 8] = [
        (
            "a foreign page's form",
            &["Origin: http://evil.com", form],
            foreign,
        ),
        ("a sandboxed frame's form", &["Origin: null", form], foreign),
        // A browser that sends no Origin still says where the request came from.
        (
            "a cross-site form, no Origin",
            &["Sec-Fetch-Site: cross-site", form],
            foreign,
        ),
        (
            "another localhost port's page",
            &["Sec-Fetch-Site: same-site", json],
            foreign,
        ),
        // With neither header (an old browser): no HTML form can send JSON.
        ("a form, no Origin", &[form], not_json),
        (
            "a multipart form",
            &["Content-Type: multipart/form-data; boundary=x"],
            not_json,
        ),
        ("a text/plain form", &["Content-Type: text/plain"], not_json),
        ("no Content-Type", &[], not_json),
    ];
    let mut failures = Vec::new();
    for (what, headers, expect) in cases {
        let lines: Vec<String> = headers.iter().map(|line| line.to_string()).collect();
        let reply = exchange(port, &request(&stop, &lines), "x=1").await;
        check_case(&mut failures, what, expect, &reply);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let after = backend(port, "mis").await;
    assert_eq!(after["state"], "ready", "nothing was stopped: {after}");
    assert_eq!(after["pid"], before["pid"], "nothing was restarted");

    // The dashboard's own request, with the same credential, does stop it.
    let own = [
        format!("Origin: http://127.0.0.1:{port}"),
        "Sec-Fetch-Site: same-origin".to_owned(),
        json.to_owned(),
    ];
    let reply = exchange(port, &request(&stop, &own), "{}").await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json()["backend"]["state"], "stopped");
}
