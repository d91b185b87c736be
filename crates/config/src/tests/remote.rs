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
    linear.oauth = Box::new(OAuthClient {
        client_id: Some("switchboard-desktop".to_owned()),
        client_secret: None,
        scopes: Some(strings(&["read", "write"])),
        ..OAuthClient::default()
    });
    assert_eq!(config.backends[0].launch, Launch::Remote(linear));
    assert_eq!(config.backends[0].prefix, "lin");
    let mut local = RemoteServer::new("http://127.0.0.1:9000/sse");
    local.transport = RemoteTransport::HttpSse;
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
    let message = |field: &str| message_of(&config, field);
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

#[test]
fn every_oauth_field_is_read() {
    // SAFETY: no other test of this process reads or writes this variable.
    unsafe { std::env::set_var("SWITCHBOARD_TEST_CLIENT_SECRET", "s-123") };
    let key = "-----BEGIN PRIVATE KEY-----\\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\\n-----END PRIVATE KEY-----\\n";
    let text = format!(
        "[servers.pinned]\nurl = \"https://mcp.example/mcp\"\n\
         [servers.pinned.oauth]\nclient_id = \"c\"\n\
         client_secret = \"${{env:SWITCHBOARD_TEST_CLIENT_SECRET}}\"\n\
         issuer = \"https://auth.example\"\n\n\
         [servers.document]\nurl = \"https://mcp.example/mcp\"\n\
         oauth = {{ client_metadata_url = \"https://app.example/client.json\" }}\n\n\
         [servers.machine]\nurl = \"https://mcp.example/mcp\"\n\
         oauth = {{ grant = \"client_credentials\", client_id = \"m\", issuer = \"https://auth.example\", private_key = \"{key}\" }}\n\n\
         [servers.workload]\nurl = \"https://mcp.example/mcp\"\n\
         oauth = {{ grant = \"jwt_bearer\", assertion_file = \"tokens/workload.jwt\" }}\n\n\
         [servers.enterprise]\nurl = \"https://mcp.example/mcp\"\n\
         [servers.enterprise.oauth]\ngrant = \"identity_assertion\"\nclient_id = \"e\"\n\
         client_secret = \"es\"\nissuer = \"http://127.0.0.1:9000\"\n\
         idp_token_endpoint = \"https://idp.example/token\"\nidp_client_id = \"idp-c\"\n\
         id_token_file = \"/run/id.jwt\"\n"
    );
    let config = parse_toml(&text);
    assert_eq!(config.diagnostics, vec![]);
    let oauth = |index: usize| match &config.backends[index].launch {
        Launch::Remote(remote) => remote.oauth.clone(),
        Launch::Process(_) => panic!("a remote server"),
    };
    let pinned = oauth(0);
    assert_eq!(pinned.client_secret.as_deref(), Some("s-123"));
    assert_eq!(pinned.issuer.as_deref(), Some("https://auth.example"));
    assert_eq!(pinned.grant, OAuthGrant::AuthorizationCode);
    assert_eq!(
        oauth(1).client_metadata_url.as_deref(),
        Some("https://app.example/client.json")
    );
    let machine = oauth(2);
    assert_eq!(machine.grant, OAuthGrant::ClientCredentials);
    assert!(
        machine
            .private_key
            .as_deref()
            .is_some_and(|key| key.contains("BEGIN PRIVATE KEY"))
    );
    let workload = oauth(3);
    assert_eq!(workload.grant, OAuthGrant::JwtBearer);
    assert_eq!(
        workload.assertion_file,
        Some(PathBuf::from("/etc/switchboard/tokens/workload.jwt")),
        "a relative file is taken from the config's directory"
    );
    let enterprise = oauth(4);
    assert_eq!(enterprise.grant, OAuthGrant::IdentityAssertion);
    let provider = enterprise
        .identity_provider
        .clone()
        .expect("an identity provider");
    assert_eq!(provider.token_endpoint, "https://idp.example/token");
    assert_eq!(provider.client_id.as_deref(), Some("idp-c"));
    assert_eq!(provider.id_token_file, PathBuf::from("/run/id.jwt"));
    // Secrets and keys are secrets: never in Debug, always among the values the activity log
    // leaves out.
    let shown = format!("{:?}", config.backends);
    assert!(!shown.contains("s-123") && !shown.contains("MIGHAgEA") && !shown.contains("\"es\""));
    let secrets = config.secret_values();
    assert!(secrets.contains(&"s-123".to_owned()));
    assert!(
        secrets
            .iter()
            .any(|secret| secret.contains("BEGIN PRIVATE KEY"))
    );
}

#[test]
fn each_oauth_mistake_is_reported_where_it_is() {
    let text = "[servers.unpinned]\nurl = \"https://a.example/mcp\"\n\
                oauth = { client_id = \"c\", client_secret = \"s\" }\n\n\
                [servers.issuer]\nurl = \"https://a.example/mcp\"\n\
                oauth = { issuer = \"http://auth.example\" }\n\n\
                [servers.grant]\nurl = \"https://a.example/mcp\"\n\
                oauth = { grant = \"password\" }\n\n\
                [servers.nosecret]\nurl = \"https://a.example/mcp\"\n\
                oauth = { grant = \"client_credentials\", client_id = \"c\" }\n\n\
                [servers.nofile]\nurl = \"https://a.example/mcp\"\n\
                oauth = { grant = \"jwt_bearer\" }\n\n\
                [servers.misplaced]\nurl = \"https://a.example/mcp\"\n\
                oauth = { assertion_file = \"token.jwt\" }\n\n\
                [servers.both]\nurl = \"https://a.example/mcp\"\n\
                oauth = { client_id = \"c\", client_metadata_url = \"https://app.example/client.json\" }\n\n\
                [servers.document]\nurl = \"https://a.example/mcp\"\n\
                oauth = { client_metadata_url = \"http://app.example/client.json\" }\n\n\
                [servers.key]\nurl = \"https://a.example/mcp\"\n\
                oauth = { client_id = \"c\", issuer = \"https://auth.example\", private_key = \"not-a-key-value\" }\n\n\
                [servers.enterprise]\nurl = \"https://a.example/mcp\"\n\
                oauth = { grant = \"identity_assertion\", client_id = \"c\" }\n";
    let config = parse_toml(text);
    assert_eq!(
        names(&config),
        Vec::<&str>::new(),
        "{:#?}",
        config.diagnostics
    );
    assert_eq!(
        positions(&config.diagnostics),
        [
            (Severity::Error, 3, 9, "servers.unpinned.oauth"),
            (Severity::Error, 7, 20, "servers.issuer.oauth.issuer"),
            (Severity::Error, 11, 19, "servers.grant.oauth.grant"),
            (Severity::Error, 15, 9, "servers.nosecret.oauth"),
            (Severity::Error, 19, 9, "servers.nofile.oauth"),
            (
                Severity::Error,
                23,
                11,
                "servers.misplaced.oauth.assertion_file"
            ),
            (
                Severity::Error,
                27,
                28,
                "servers.both.oauth.client_metadata_url"
            ),
            (
                Severity::Error,
                31,
                33,
                "servers.document.oauth.client_metadata_url"
            ),
            (Severity::Error, 35, 75, "servers.key.oauth.private_key"),
            (Severity::Error, 39, 9, "servers.enterprise.oauth"),
        ]
    );
    let message = |field: &str| message_of(&config, field);
    assert!(
        message("servers.unpinned.oauth").contains("add `issuer = "),
        "a secret without the authorization server it belongs to says what to add"
    );
    assert!(message("servers.grant.oauth.grant").contains("\"client_credentials\""));
    assert!(message("servers.nofile.oauth").contains("assertion_file"));
    assert!(message("servers.misplaced.oauth.assertion_file").contains("jwt_bearer"));
    assert!(message("servers.enterprise.oauth").contains("idp_token_endpoint"));
    let key = message("servers.key.oauth.private_key");
    assert!(
        key.contains("PEM") && !key.contains("not-a-key-value"),
        "{key}"
    );
}
