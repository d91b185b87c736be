//! How editors reach the hub: Streamable HTTP at `/mcp`, the local socket (a named pipe on
//! Windows), and `switchboard connect`, the stdio shim that hands an editor's pipes to the
//! socket, or relays its lines where they cannot be handed over.
//!
//! Floor 7 of the workspace (ARCHITECTURE.md). It stands on `hub` and below; it never decides what
//! a message means.

pub mod connect;
pub mod guard;
pub mod handoff;
pub mod http;
pub mod socket;
pub mod token;
