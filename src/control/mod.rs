//! The control plane: the dashboard's API under `/api`, its token and files, live reload of the
//! config file, and the command-line client that talks to a running instance.

pub(crate) mod api;
pub mod attention;
pub mod client;
pub mod instance;
pub mod reload;
pub(crate) mod ui;
