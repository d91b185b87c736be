//! The control plane: the dashboard's API under `/api`, its token and files, live reload of the
//! config file, and the command-line client that talks to a running instance.

pub mod api;
pub mod client;
pub mod reload;
pub mod token;
pub mod ui;
