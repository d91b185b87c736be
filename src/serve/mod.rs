//! The transports that offer the hub to editors.

pub mod http;
pub mod socket;
