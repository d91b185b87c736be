//! What both sides of Switchboard speak: the JSON-RPC envelope, newline framing and the
//! protocol eras.

pub mod era;
pub mod framing;
pub mod jsonrpc;
