//! Switchboard's integration tests, in one binary: each module drives real processes (the
//! supervisor, `switchboard serve`, `switchboard connect`, editors' SDKs, a browser) through real
//! pipes, sockets and HTTP. `support` holds what they share. `wine` runs Switchboard built for
//! Windows under Wine, and only when asked (see `.config/nextest.toml`).
#![allow(clippy::disallowed_methods)]

mod support;

mod activity;
mod api;
mod approvals;
mod apps;
mod backend_era;
mod command_line;
mod connect;
mod editors;
mod engine;
mod hub;
mod installing;
mod instance;
mod interop_js;
mod interop_rmcp;
mod mcp_token;
mod names;
mod parity;
mod pins;
mod profiles;
mod questions;
mod registry;
mod reload;
mod remote;
mod sandbox;
mod sdk_clients;
mod search;
mod secrets;
mod security;
mod serve;
mod sign_in;
mod skills;
mod soak;
mod stateless;
mod task_owners;
mod ui;
mod wine;
