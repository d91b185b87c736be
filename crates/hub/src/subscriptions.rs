//! Resource subscriptions. An editor's `resources/subscribe` and `resources/unsubscribe` go to
//! a session-era backend as they are; a stateless-era backend has neither, and its listen names the
//! resources editors want instead, for as long as a session holds a watch of each
//! (`supervisor::subscriptions`). Either way the session remembers what it subscribed to, and
//! the updates reach it through `upstream.rs`.

use std::time::Duration;

use serde_json::value::RawValue;

use super::capabilities::ready_with;
use super::rewrite::ObjectEntries;
use super::session::{Session, SessionState};
use supervisor::BackendHandle;
use wire::jsonrpc::{self, ErrorObject};
use wire::meta;
use wire::method::Method;

/// What a successful `resources/subscribe` or `resources/unsubscribe` changes for the session.
pub(super) enum Subscription {
    Subscribe(String),
    Unsubscribe(String),
}

impl Subscription {
    /// The change a `method` request with `params` asks for, if it is one.
    pub(super) fn of(method: &Method, params: Option<&RawValue>) -> Option<Subscription> {
        let uri = || {
            params
                .and_then(|params| ObjectEntries::parse(params.get()).ok())
                .and_then(|params| params.get_str("uri").map(|uri| uri.into_owned()))
        };
        match method {
            Method::ResourcesSubscribe => uri().map(Subscription::Subscribe),
            Method::ResourcesUnsubscribe => uri().map(Subscription::Unsubscribe),
            _ => None,
        }
    }

    /// Records the change in the session's state, once its backend took it.
    pub(super) fn apply(&self, state: &mut SessionState) {
        match self {
            Subscription::Subscribe(uri) => {
                state.subscriptions.insert(uri.clone());
            }
            Subscription::Unsubscribe(uri) => {
                state.subscriptions.remove(uri);
            }
        }
    }

    /// Makes the change at `backend`, a stateless-era one, through its listen, and answers as
    /// `resources/subscribe` would: a subscription once the server acknowledged the resource,
    /// within `timeout`.
    pub(super) async fn over_listen(
        &self,
        session: &Session,
        backend: &BackendHandle,
        timeout: Duration,
    ) -> Result<String, ErrorObject> {
        match self {
            Subscription::Subscribe(uri) => {
                if !ready_with(backend, &["resources", "subscribe"]) {
                    return Err(ErrorObject::new(
                        jsonrpc::METHOD_NOT_FOUND,
                        format!(
                            "backend {} does not offer updates of its resources",
                            backend.name()
                        ),
                    ));
                }
                let watch = backend.watch_resource(uri);
                if !watch.acknowledged(timeout).await {
                    return Err(ErrorObject::new(
                        jsonrpc::REQUEST_TIMEOUT,
                        format!(
                            "backend {} did not take a subscription to {uri} within {} ms",
                            backend.name(),
                            timeout.as_millis()
                        ),
                    ));
                }
                session.lock_state().watches.insert(uri.clone(), watch);
            }
            Subscription::Unsubscribe(uri) => {
                session.lock_state().watches.remove(uri);
            }
        }
        Ok("{}".to_owned())
    }
}

/// A stateless-era backend's notification as an editor gets it: without the `subscriptionId` of the
/// listen it came on, which is Switchboard's own. `None` when it names none.
pub(super) fn without_subscription_id(params: &RawValue) -> Option<Box<RawValue>> {
    let mut entries = ObjectEntries::parse(params.get()).ok()?;
    let meta = entries.get("_meta")?.get().to_owned();
    let mut meta = ObjectEntries::parse(&meta).ok()?;
    if !meta.remove(meta::SUBSCRIPTION_ID) {
        return None;
    }
    if meta.is_empty() {
        entries.remove("_meta");
    } else {
        entries.set("_meta", meta.into_raw());
    }
    Some(entries.into_raw())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).expect("JSON")
    }

    #[test]
    fn an_update_loses_only_the_subscription_id_of_switchboards_listen() {
        let stamped =
            raw(r#"{"uri":"a://1","_meta":{"io.modelcontextprotocol/subscriptionId":7}}"#);
        assert_eq!(
            without_subscription_id(&stamped).expect("rewritten").get(),
            r#"{"uri":"a://1"}"#
        );
        let more =
            raw(r#"{"uri":"a://1","_meta":{"io.modelcontextprotocol/subscriptionId":7,"x":1}}"#);
        assert_eq!(
            without_subscription_id(&more).expect("rewritten").get(),
            r#"{"uri":"a://1","_meta":{"x":1}}"#
        );
        assert!(without_subscription_id(&raw(r#"{"uri":"a://1","_meta":{"x":1}}"#)).is_none());
        assert!(without_subscription_id(&raw(r#"{"uri":"a://1"}"#)).is_none());
    }
}
