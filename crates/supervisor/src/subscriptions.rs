//! Resource subscriptions at a stateless-era backend. The stateless era has no
//! `resources/subscribe`: a client names the resources it wants updates of in its
//! `subscriptions/listen`. The one listen Switchboard keeps open on a stateless-era backend
//! (`handshake::keep_listening`) names every resource some editor wants, and is opened again,
//! naming them anew, whenever that set changes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::watch;

/// What editors want of one stateless-era backend's resources, and what its server acknowledged.
pub(crate) struct Subscriptions {
    /// Each URI some editor wants updates of, with how many watches want it.
    wanted: watch::Sender<BTreeMap<String, usize>>,
    /// The URIs the server's current listen acknowledged.
    acknowledged: watch::Sender<Arc<BTreeSet<String>>>,
}

impl Default for Subscriptions {
    fn default() -> Subscriptions {
        Subscriptions {
            wanted: watch::Sender::new(BTreeMap::new()),
            acknowledged: watch::Sender::new(Arc::default()),
        }
    }
}

impl Subscriptions {
    /// Wants updates of `uri` for as long as the returned watch lives.
    pub(super) fn watch(self: &Arc<Self>, uri: &str) -> ResourceWatch {
        self.wanted.send_if_modified(|wanted| {
            let count = wanted.entry(uri.to_owned()).or_default();
            *count += 1;
            *count == 1
        });
        ResourceWatch {
            subscriptions: self.clone(),
            uri: uri.to_owned(),
        }
    }

    /// The URIs some editor wants updates of, marked changed only when that set does.
    pub(super) fn wanted(&self) -> watch::Receiver<BTreeMap<String, usize>> {
        self.wanted.subscribe()
    }

    /// A listen is being opened: nothing counts as acknowledged until it is.
    pub(super) fn reopening(&self) {
        self.acknowledged.send_replace(Arc::default());
    }

    /// Takes the params of the server's `notifications/subscriptions/acknowledged`: the
    /// resources its listen honours.
    pub(super) fn acknowledge(&self, params: Option<&RawValue>) {
        #[derive(Deserialize, Default)]
        struct Acknowledged {
            #[serde(default)]
            notifications: Honoured,
        }
        #[derive(Deserialize, Default)]
        struct Honoured {
            #[serde(default, rename = "resourceSubscriptions")]
            resources: BTreeSet<String>,
        }
        let honoured = params
            .and_then(|params| serde_json::from_str::<Acknowledged>(params.get()).ok())
            .unwrap_or_default();
        self.acknowledged
            .send_replace(Arc::new(honoured.notifications.resources));
    }
}

/// Updates of one resource wanted from a stateless-era backend: its listen names the resource until
/// the last watch of it is dropped.
pub struct ResourceWatch {
    subscriptions: Arc<Subscriptions>,
    uri: String,
}

impl ResourceWatch {
    /// Waits, at most `timeout`, until the server's listen acknowledges the resource; whether
    /// it did.
    pub async fn acknowledged(&self, timeout: Duration) -> bool {
        let mut acknowledged = self.subscriptions.acknowledged.subscribe();
        let honoured = acknowledged.wait_for(|honoured| honoured.contains(&self.uri));
        matches!(tokio::time::timeout(timeout, honoured).await, Ok(Ok(_)))
    }

    /// The resource's URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }
}

impl Drop for ResourceWatch {
    fn drop(&mut self) {
        self.subscriptions.wanted.send_if_modified(|wanted| {
            let Some(count) = wanted.get_mut(&self.uri) else {
                return false;
            };
            *count -= 1;
            if *count > 0 {
                return false;
            }
            wanted.remove(&self.uri);
            true
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).expect("JSON")
    }

    #[tokio::test]
    async fn the_listen_names_a_resource_while_any_watch_of_it_lives() {
        let subscriptions = Arc::new(Subscriptions::default());
        let mut wanted = subscriptions.wanted();
        let first = subscriptions.watch("a://1");
        assert!(wanted.has_changed().expect("open"));
        assert_eq!(
            wanted.borrow_and_update().keys().collect::<Vec<_>>(),
            ["a://1"]
        );
        let second = subscriptions.watch("a://1");
        drop(first);
        assert!(
            !wanted.has_changed().expect("open"),
            "the set of resources is the same"
        );
        drop(second);
        assert!(wanted.has_changed().expect("open"));
        assert!(wanted.borrow_and_update().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_is_acknowledged_once_the_servers_listen_honours_its_resource() {
        let subscriptions = Arc::new(Subscriptions::default());
        let watch = subscriptions.watch("a://1");
        let short = Duration::from_secs(1);
        assert!(!watch.acknowledged(short).await);
        subscriptions.acknowledge(Some(&raw(
            r#"{"notifications":{"toolsListChanged":true},"_meta":{}}"#,
        )));
        assert!(!watch.acknowledged(short).await, "not honoured");
        subscriptions.acknowledge(Some(&raw(
            r#"{"notifications":{"resourceSubscriptions":["a://1"]}}"#,
        )));
        assert!(watch.acknowledged(short).await);
        subscriptions.reopening();
        assert!(!watch.acknowledged(short).await, "a new listen is not yet");
    }
}
