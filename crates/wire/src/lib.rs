//! What both sides of Switchboard speak: the JSON-RPC envelope, the methods' names, the keys of
//! `_meta`, newline framing, the protocol eras, the arguments 2026-07-28 mirrors into headers, how a failed
//! HTTP request is told, what MCP Apps adds to tools, and what Skills add to resources.
//!
//! Floor 2 of the workspace (ARCHITECTURE.md). It stands on `platform` alone and knows nothing of
//! backends, sessions or transports.

pub mod apps;
pub mod era;
pub mod framing;
pub mod http_error;
pub mod jsonrpc;
pub mod meta;
pub mod method;
pub mod mirrored;
pub mod skills;

/// How much of an untrusted value (a header, a name, an id) an error message repeats.
const MAX_ECHOED_CHARS: usize = 120;

/// An untrusted value quoted for an error message, cut short.
pub fn echo(value: &str) -> String {
    let cut: String = value.chars().take(MAX_ECHOED_CHARS).collect();
    format!("{cut:?}")
}
