//! Switchboard's core: supervises local MCP servers and offers them to editors.
//!
//! See `ARCHITECTURE.md` for the codemap and the invariants.

pub mod app;
pub mod config;
pub mod connect;
pub mod control;
pub mod demo;
pub mod dirs;
pub mod editors;
pub mod framing;
pub mod handoff;
pub mod hub;
pub mod jsonrpc;
pub mod output;
pub mod policy;
pub mod reload;
pub mod rpc;
pub mod serve;
pub mod spawn;
pub mod status;
pub mod supervisor;
