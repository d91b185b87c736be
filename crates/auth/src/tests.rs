use super::*;
use crate::reach::Bounds;

fn record(expires_in: Option<u64>, lifetime: Option<u64>, now: SystemTime) -> TokenRecord {
    TokenRecord {
        url: "https://mcp.example/mcp".to_owned(),
        issuer: "https://auth.example".to_owned(),
        token_endpoint: "https://auth.example/token".to_owned(),
        client_id: "c".to_owned(),
        client_secret: None,
        resource: "https://mcp.example/mcp".to_owned(),
        access_token: "secret-token-value".to_owned(),
        refresh_token: Some("r".to_owned()),
        expires_at: expires_in.map(|seconds| unix_seconds(now) + seconds),
        lifetime,
        token_auth: None,
        scopes: vec!["read".to_owned()],
        dpop_key: None,
        proof_key: None,
    }
}

#[test]
fn a_token_is_refreshed_in_the_last_fifth_of_its_life_or_minute() {
    let now = SystemTime::now();
    assert!(!needs_refresh(&record(Some(3000), Some(3600), now), now));
    assert!(needs_refresh(&record(Some(700), Some(3600), now), now));
    assert!(!needs_refresh(&record(Some(100), Some(120), now), now));
    assert!(needs_refresh(&record(Some(59), Some(120), now), now));
    // After a sleep the wall clock has moved on: an expired token is refreshed first.
    let later = now + Duration::from_secs(7200);
    assert!(needs_refresh(&record(Some(3000), Some(3600), now), later));
    assert!(!needs_refresh(&record(None, None, now), later));
}

#[test]
fn the_resource_must_be_where_the_server_is() {
    let url = reqwest::Url::parse("https://mcp.example/api/mcp").expect("a URL");
    assert_eq!(
        canonical_resource(&url, None).as_deref(),
        Ok("https://mcp.example/api/mcp")
    );
    assert_eq!(
        canonical_resource(&url, Some("https://mcp.example")).as_deref(),
        Ok("https://mcp.example")
    );
    assert!(canonical_resource(&url, Some("https://evil.example/api/mcp")).is_err());
    assert!(canonical_resource(&url, Some("https://mcp.example/other")).is_err());
}

#[test]
fn only_https_or_this_machine_may_carry_secrets() {
    // From a server on this machine, the most that discovery may reach.
    let bounds = Bounds::fixed("http://127.0.0.1:8000/mcp", Reach::Machine);
    let safe = |text: &str| {
        bounds
            .check(
                &reqwest::Url::parse(text).expect("a URL"),
                "the token endpoint",
            )
            .is_ok()
    };
    assert!(safe("https://auth.example/token"));
    assert!(safe("http://127.0.0.1:9000/token"));
    assert!(safe("http://localhost:9000/token"));
    assert!(safe("http://[::1]:9000/token"));
    assert!(!safe("http://auth.example/token"));
    assert!(!safe("http://127.0.0.1.evil.example/token"));
    assert!(!safe("ftp://auth.example/token"));
}

#[test]
fn records_written_before_their_newer_fields_still_read() {
    let old = r#"{"url":"https://mcp.example/mcp","issuer":"https://auth.example",
        "token_endpoint":"https://auth.example/token","client_id":"c","client_secret":"s",
        "resource":"https://mcp.example/mcp","access_token":"a","refresh_token":null,
        "expires_at":null,"lifetime":null}"#;
    let record: TokenRecord = serde_json::from_str(old).expect("an old record reads");
    assert!(record.scopes.is_empty());
    assert!(record.credential().proof_key.is_none());
    // Then, the secret went in the form.
    assert_eq!(record.client().auth, TokenAuth::ClientSecretPost);
}

#[test]
fn a_dpop_bound_credential_goes_with_a_proof_and_a_bearer_one_without() {
    let url = reqwest::Url::parse("https://mcp.example/mcp").expect("a URL");
    let http = reqwest::Client::new();
    let header = |credential: &Credential, name: &str| {
        let request = credential
            .authorize(
                http.post(url.clone()),
                &reqwest::Method::POST,
                &url,
                Some("n"),
            )
            .build()
            .expect("a request");
        request
            .headers()
            .get(name)
            .map(|value| value.to_str().expect("text").to_owned())
    };
    let bearer = record(None, None, SystemTime::now()).credential();
    assert_eq!(
        header(&bearer, "authorization").as_deref(),
        Some("Bearer secret-token-value")
    );
    assert_eq!(header(&bearer, "dpop"), None);
    let key = DpopKey::generate();
    let bound = TokenRecord {
        dpop_key: Some(key.kept()),
        ..record(None, None, SystemTime::now())
    }
    .with_proof_key()
    .credential();
    assert_eq!(
        header(&bound, "authorization").as_deref(),
        Some("DPoP secret-token-value")
    );
    assert!(header(&bound, "dpop").is_some_and(|proof| proof.split('.').count() == 3));
    assert!(!format!("{bound:?}").contains("secret-token-value"));
}

#[test]
fn each_authorization_server_has_a_callback_path_of_its_own() {
    let one = callback_id("https://auth.example");
    let other = callback_id("https://other.example");
    assert_eq!(one.len(), 16);
    assert_ne!(one, other);
    assert!(is_callback_path(&format!("{CALLBACK_PATH}/{one}")));
    assert!(!is_callback_path(CALLBACK_PATH));
    assert!(!is_callback_path(&format!("{CALLBACK_PATH}/")));
    assert!(!is_callback_path(&format!("{CALLBACK_PATH}/{one}/more")));
    assert!(!is_callback_path("/api/backends"));
}

#[tokio::test]
async fn a_callback_with_an_unknown_state_is_refused() {
    let auth = Auth::new();
    let refused = auth
        .complete_sign_in(
            &callback_id("https://auth.example"),
            &CallbackQuery {
                code: Some("c".to_owned()),
                state: Some("forged".to_owned()),
                ..CallbackQuery::default()
            },
        )
        .await;
    assert!(
        matches!(&refused, Err(AuthError::Callback(message)) if message.contains("unknown or has expired")),
        "{refused:?}"
    );
}
