//! What both sides of Switchboard speak: the JSON-RPC envelope, the methods' names, newline
//! framing, the protocol eras, the arguments 2026-07-28 mirrors into headers, how a failed
//! HTTP request is told, what MCP Apps adds to tools, and what Skills add to resources.

pub mod apps;
pub mod era;
pub mod framing;
pub mod http_error;
pub mod jsonrpc;
pub mod method;
pub mod mirrored;
pub mod skills;
