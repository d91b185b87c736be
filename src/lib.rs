//! Switchboard's core: supervises local MCP servers and offers them to editors.
//!
//! The folders follow the data flow, from the bottom up: `wire` (JSON-RPC and framing),
//! `supervisor` (one task per backend), `hub` (one MCP server made of every backend),
//! `transport` (how editors reach the hub), `control` (the dashboard's API and live reload);
//! `platform` holds what differs between Linux, macOS and Windows.
//! See `ARCHITECTURE.md` for the codemap and the invariants.

pub mod activity;
pub mod app;
pub mod atomic;
pub mod auth;
pub mod cli;
pub mod clock;
pub mod config;
pub mod control;
pub mod demo;
pub mod dirs;
pub mod editors;
pub(crate) mod guard;
pub mod hex;
pub mod hub;
pub mod platform;
pub mod registry;
pub mod secrets;
pub mod supervisor;
pub mod token;
pub mod transport;
pub mod wire;
