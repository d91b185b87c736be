//! The transports that offer the hub to editors.

pub mod api;
pub mod http;
pub mod socket;
pub mod token;
pub mod ui;
