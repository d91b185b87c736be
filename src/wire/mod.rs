//! What both sides of Switchboard speak: the JSON-RPC envelope, newline framing, the protocol
//! eras and the arguments 2026-07-28 mirrors into headers.

pub mod era;
pub mod framing;
pub mod jsonrpc;
pub mod mirrored;
