//! The keys of `_meta` the protocol itself defines, in both eras, written here alone (an
//! extension's stay with it, as MCP Apps' in `apps.rs`): the progress token a request asks for
//! progress with, the task a message belongs to, and the stateless era's envelope of a request
//! and what its results carry.

use serde::Deserialize;
use serde_json::value::RawValue;

/// The token a request asks for progress notifications with, in its `params._meta`; each
/// `notifications/progress` names it in its params, by the same field.
pub const PROGRESS_TOKEN: &str = "progressToken";

/// The [`PROGRESS_TOKEN`] of the params of a `notifications/progress`, borrowed from them.
pub fn progress_token(params: &RawValue) -> Option<&RawValue> {
    #[derive(Deserialize)]
    struct Progress<'a> {
        // The field is `PROGRESS_TOKEN`, which an attribute cannot name: a test keeps them one.
        #[serde(borrow, rename = "progressToken")]
        token: &'a RawValue,
    }
    let progress: Progress<'_> = serde_json::from_str(params.get()).ok()?;
    Some(progress.token)
}

/// The task a message belongs to (2025-11-25): `{"taskId": …}` in the `_meta` of a task's
/// result and of the requests and notifications a server sends while running it.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The stateless era's request's protocol version (required).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// What the client can be asked during this stateless-era request (required).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The client's name and version, on a stateless-era request (recommended).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The lowest level of log messages the client wants with this stateless-era request (optional).
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The server's name and version, on stateless-era results.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The listen a notification was sent on (the id of its `subscriptions/listen`).
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progress_notification_names_its_token_by_the_one_field() {
        let params = format!(r#"{{"{PROGRESS_TOKEN}":"t-1","progress":3}}"#);
        let params = RawValue::from_string(params).expect("JSON");
        assert_eq!(progress_token(&params).map(RawValue::get), Some(r#""t-1""#));
        let without = RawValue::from_string(r#"{"progress":3}"#.to_owned()).expect("JSON");
        assert!(progress_token(&without).is_none());
    }
}
