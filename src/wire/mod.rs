//! What both sides of Switchboard speak: the JSON-RPC envelope and newline framing.

pub mod framing;
pub mod jsonrpc;
