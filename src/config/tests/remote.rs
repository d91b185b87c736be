//! Reading remote servers (`url`): every field, and each mistake where it is.

use super::*;

#[test]
fn every_remote_field_is_read() {
    // SAFETY: no other test of this process reads or writes this variable.
    unsafe { std::env::set_var("SWITCHBOARD_TEST_REMOTE_KEY", "k-123") };
    let text = "[servers.linear]\nurl = \"https://mcp.linear.app/mcp\"\n\
                headers = { \"X-Api-Key\" = \"${env:SWITCHBOARD_TEST_REMOTE_KEY}\" }\n\
                timeout = \"5s\"\ntransport = \"streamable-http\"\nprefix = \"lin\"\n\n\
                [servers.linear.oauth]\nclient_id = \"switchboard-desktop\"\n\
                scopes = [\"read\", \"write\"]\n\n\
                [servers.local]\nurl = \"http://127.0.0.1:9000/sse\"\ntransport = \"sse\"\n";
    let config = parse_toml(text);
    assert_eq!(config.diagnostics, vec![]);
    let mut linear = RemoteServer::new("https://mcp.linear.app/mcp");
    linear
        .headers
        .insert("X-Api-Key".to_owned(), "k-123".to_owned());
    linear.written.values.insert(
        "X-Api-Key".to_owned(),
        "${env:SWITCHBOARD_TEST_REMOTE_KEY}".to_owned(),
    );
    linear.timeout = Duration::from_secs(5);
    linear.transport = RemoteTransport::StreamableHttp;
    linear.oauth = OAuthClient {
        client_id: Some("switchboard-desktop".to_owned()),
        client_secret: None,
        scopes: Some(strings(&["read", "write"])),
    };
    assert_eq!(config.backends[0].launch, Launch::Remote(linear));
    assert_eq!(config.backends[0].prefix, "lin");
    let mut local = RemoteServer::new("http://127.0.0.1:9000/sse");
    local.transport = RemoteTransport::Sse;
    assert_eq!(config.backends[1].launch, Launch::Remote(local));
    // Header values may be secrets: Debug shows their names only.
    assert!(!format!("{:?}", config.backends[0]).contains("k-123"));
}

#[test]
fn each_remote_mistake_is_reported_where_it_is() {
    let text = "[servers.both]\ncommand = \"sh\"\nurl = \"https://a.example/mcp\"\n\n\
                [servers.relative]\nurl = \"/mcp\"\n\n\
                [servers.ftp]\nurl = \"ftp://a.example/mcp\"\n\n\
                [servers.header]\nurl = \"https://a.example/mcp\"\nheaders = { \"Bad Name\" = \"x\" }\n\n\
                [servers.secretless]\nurl = \"https://a.example/mcp\"\noauth = { client_secret = \"s\" }\n\n\
                [servers.transport]\nurl = \"https://a.example/mcp\"\ntransport = \"websocket\"\n\n\
                [servers.nothing]\ntimeout = \"5s\"\n\n\
                [servers.clear]\nurl = \"http://mcp.example.com/mcp\"\n";
    let config = parse_toml(text);
    assert_eq!(names(&config), ["clear"], "{:#?}", config.diagnostics);
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Error, 3, 1, "servers.both.url"),
            (Severity::Error, 6, 7, "servers.relative.url"),
            (Severity::Error, 9, 7, "servers.ftp.url"),
            (Severity::Error, 13, 13, "servers.header.headers.Bad Name"),
            (Severity::Error, 17, 9, "servers.secretless.oauth"),
            (Severity::Error, 21, 13, "servers.transport.transport"),
            (Severity::Error, 23, 10, "servers.nothing"),
            (Severity::Warning, 27, 7, "servers.clear.url"),
        ]
    );
    let message = |field: &str| {
        config
            .diagnostics
            .iter()
            .find(|diagnostic| diagnostic.field == field)
            .map(|diagnostic| diagnostic.message.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        message("servers.both.url"),
        "`url` is for a remote server and `command` for a local one; a server has a `command` \
         or a `url`, not both"
    );
    assert_eq!(
        message("servers.ftp.url"),
        "expected an http:// or https:// URL, found \"ftp://a.example/mcp\""
    );
    assert_eq!(
        message("servers.nothing"),
        "missing field `url`: the address of the remote server"
    );
    assert!(message("servers.clear.url").contains("unencrypted"));
}
