//! The two eras of MCP: the session era (`initialize`, up to 2025-11-25) and the stateless era
//! (2026-07-28 on), where every request carries its protocol version and the client's
//! capabilities in `params._meta`.

/// The stateless revision Switchboard speaks, on both sides.
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// The session-era versions Switchboard speaks, newest first.
pub const LEGACY_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Keys of a stateless request's `params._meta` and of a result's `_meta`.
pub mod meta {
    /// The request's protocol version (required).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// What the client can be asked during this request (required).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's name and version (recommended).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The lowest level of log messages the client wants with this request (optional).
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's name and version, on results.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
}

/// The stateless era's error codes (answered with HTTP 400 over Streamable HTTP).
pub mod code {
    /// An `Mcp-*` header disagrees with the body, or a required one is missing.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability its `_meta` did not declare.
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// The request's protocol version is one the server does not speak.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}
