//! The control plane: the dashboard's API under `/api`, its token and files, live reload of the
//! config file, and the command-line client that talks to a running instance.
//!
//! Floor 9 of the workspace (ARCHITECTURE.md). It stands on every floor below it; nothing but `cli`
//! and the desktop app imports it.

pub mod api;
pub mod attention;
pub mod client;
pub mod instance;
pub mod reload;
pub mod ui;
