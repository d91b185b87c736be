//! How editors reach the hub: Streamable HTTP at `/mcp`, the unix socket, and `switchboard
//! connect`, the stdio shim that hands an editor's pipes to the socket.

pub mod connect;
pub mod handoff;
pub mod http;
pub mod socket;
