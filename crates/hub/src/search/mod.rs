//! Finding tools: ranking them for a query (`rank.rs`), the tools search mode lists (`tools.rs`),
//! and what a call of them does (`mode.rs`).

pub(super) mod mode;
pub(crate) mod rank;
pub(super) mod tools;
