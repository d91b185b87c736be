//! Cold start: while backends are on their way to ready and nothing is known of them yet (the
//! first run without a cached catalog, a server just added to the config), a list waits for
//! them so that its first answer is whole (many clients list once and ignore `list_changed`),
//! and so does a call to a name only such a backend can own. A backend whose last known catalog
//! is cached is listed from that cache meanwhile, without waiting.
//!
//! Each wait is bounded by that backend's own handshake timeout: a backend that does not finish
//! its handshake in time fails it and stops being waited for. A backend in backoff, in a crash
//! loop, stopped (by hand, or waiting to be started on demand) or stopping is never waited for.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::HubInner;
use supervisor::BackendHandle;
use supervisor::status::{BackendState, BackendStatus};

/// The longest a list or call waits for the catalog to be rebuilt once the backends it waited
/// for have settled (a rebuild follows every change within milliseconds).
const REBUILD_WAIT: Duration = Duration::from_secs(1);

/// Which starting backends something waits for.
#[derive(Debug)]
pub(super) enum Waiting<'a> {
    /// Every one: a list, or a call by URI, which any backend may own.
    All,
    /// Those whose exposed names could be this one: the name starts with their prefix.
    Owners(Cow<'a, str>),
}

/// The backends on their way to ready that `waiting` concerns and of which nothing is known yet:
/// one whose last known catalog is cached is listed from it meanwhile.
pub(super) fn starting(hub: &HubInner, waiting: &Waiting<'_>) -> Vec<BackendHandle> {
    hub.engine
        .backends()
        .into_iter()
        .filter(|backend| !hub.catalogued(backend.name()))
        .filter(|backend| on_its_way(&backend.watch_status().borrow(), backend.config().enabled))
        .filter(|backend| match waiting {
            Waiting::All => true,
            Waiting::Owners(name) => {
                name.starts_with(&super::names::exposed_prefix(&backend.config().prefix))
            }
        })
        .collect()
}

/// Whether a backend is on its way to ready: starting, or just launched (enabled, and its task
/// has not taken its first command yet).
fn on_its_way(status: &BackendStatus, enabled: bool) -> bool {
    match status.state {
        BackendState::Starting => true,
        BackendState::Stopped => enabled && status.history.is_empty(),
        _ => false,
    }
}

/// Whether the catalog can be read as it is: no backend it concerns is starting and no rebuild
/// is due.
pub(super) fn settled(hub: &HubInner, waiting: &Waiting<'_>) -> bool {
    !hub.catalog_due() && starting(hub, waiting).is_empty()
}

/// Waits until every backend in `backends` has left `Starting` (each for at most its handshake
/// timeout), then, if a rebuild is due, for one rebuild begun since (asked for at once): it
/// covers every change the backends made, however many others a busy start keeps making.
pub(super) async fn settle(hub: &Arc<HubInner>, backends: Vec<BackendHandle>) {
    let started = Instant::now();
    for backend in backends {
        let config = backend.config();
        let deadline = started + config.handshake_timeout;
        let mut status = backend.watch_status();
        let _ = tokio::time::timeout_at(
            deadline,
            status.wait_for(|status| !on_its_way(status, config.enabled)),
        )
        .await;
    }
    // Read before the check: a rebuild begun after this read saw every change made before it.
    let begun = hub.rebuilds_begun.load(Ordering::Acquire);
    if hub.catalog_due() {
        let mut rebuilt = hub.rebuilt.subscribe();
        hub.rebuild_now.notify_one();
        let _ = tokio::time::timeout(REBUILD_WAIT, rebuilt.wait_for(|done| *done > begun)).await;
    }
}
