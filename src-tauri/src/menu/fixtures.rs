//! The core's data as the menu's tests need it: a backend in a state, a valid config, and a
//! held-back tool.

use control::reload::ConfigState;
use hub::pins::{Definition, Held, HeldReason, PinnedKind};
use supervisor::status::{BackendState, BackendStatus};

/// A backend of this name in this state, the rest as a new one has it.
pub fn status(name: &str, state: BackendState) -> BackendStatus {
    BackendStatus {
        state,
        ..BackendStatus::new(name)
    }
}

/// The state of a valid config, as the core makes it.
pub fn config() -> ConfigState {
    let path = std::path::Path::new("/home/someone/.config/switchboard/config.toml");
    let config = config::parse(path, "[endpoint]\nrequire_token = true\n").expect("valid");
    ConfigState::loaded(&config)
}

/// A tool of `server` held back for `reason`.
pub fn held(server: &str, name: &str, reason: HeldReason) -> Held {
    Held {
        server: server.to_owned(),
        kind: PinnedKind::Tool,
        name: name.to_owned(),
        key: name.to_owned(),
        reason,
        detail: None,
        pinned: None,
        current: Definition::new(
            serde_json::value::to_raw_value(&serde_json::json!({ "name": name })).expect("JSON"),
        ),
        sha256: String::new(),
    }
}
