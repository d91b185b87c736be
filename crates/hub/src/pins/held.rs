//! What is held back from editors until someone approves it, and why: what the Review page,
//! the "needs attention" panel and the tray are told (`GET /api/pins`, the `pins` event).

use std::collections::BTreeMap;

use serde::Serialize;

use super::Definition;

/// What a pin is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PinnedKind {
    Tool,
    Prompt,
    /// The server's instructions (one per server).
    Instructions,
    /// A skill's entry (the Skills extension), with every file's digest: known by its URI.
    Skill,
}

impl PinnedKind {
    /// Its name, as the API's JSON writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            PinnedKind::Tool => "tool",
            PinnedKind::Prompt => "prompt",
            PinnedKind::Instructions => "instructions",
            PinnedKind::Skill => "skill",
        }
    }
}

/// Why something is held back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HeldReason {
    /// Its definition differs from the one pinned.
    Changed,
    /// It was never seen before: from a server that already has pins, or from any server with
    /// `approve_new_tools` on.
    New,
    /// The server's pin file cannot be read, so nothing of it can be checked.
    Unreadable,
    /// Its definition cannot be checked (see `detail`).
    Unchecked,
}

impl HeldReason {
    /// Its name, as the API's JSON writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            HeldReason::Changed => "changed",
            HeldReason::New => "new",
            HeldReason::Unreadable => "unreadable",
            HeldReason::Unchecked => "unchecked",
        }
    }
}

/// Something held back from editors until it is approved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Held {
    pub server: String,
    pub kind: PinnedKind,
    /// The server's own name for it (`instructions` for the instructions).
    pub name: String,
    /// What an approval names it by: a tool's name, `prompt:NAME`, `instructions`, or
    /// `skill:URI`.
    pub key: String,
    pub reason: HeldReason,
    /// Why it cannot be checked, for [`HeldReason::Unchecked`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The definition pinned before, for a changed one.
    pub pinned: Option<Definition>,
    /// The definition the server offers now: its pinned part, or for one that cannot be
    /// checked, what the server sent.
    pub current: Definition,
    /// SHA-256 of `current`, for an approval of exactly what was reviewed.
    pub sha256: String,
}

/// Why an approval was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApproveError {
    #[error("{0}")]
    NotHeld(String),
    /// Something changed (or joined the held ones) after the reviewer saw it.
    #[error("{0}")]
    ChangedSince(String),
}

/// What is held, and what went wrong with the pin files, at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PinReport {
    pub held: Vec<Held>,
    /// Per server: why its pins cannot be read or saved.
    pub problems: BTreeMap<String, String>,
}
