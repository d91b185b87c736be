//! A command's result, on stdout: what a person would pipe (search hits, `check`'s report, the
//! plan of `add`), as text or as one JSON document (`--json`). Progress, questions, warnings and
//! errors go to stderr, with `eprintln!`. This is the one place the command line writes to
//! stdout (`connect` and `demo-server` speak MCP there instead).
//!
//! A closed stdout (`switchboard search x | head -1`) ends the writing quietly: the reader has
//! what it wanted.

use std::io::Write as _;

/// Writes `text` and a line break on stdout.
pub(crate) fn line(text: impl std::fmt::Display) {
    write_all(format!("{text}\n").as_bytes());
}

/// Writes `text` on stdout as it is: a result that ends its own lines.
pub(crate) fn text(text: &str) {
    write_all(text.as_bytes());
}

/// Writes `value` as one JSON document (indented, then a line break) on stdout.
pub(crate) fn json(value: &impl serde::Serialize) {
    let mut text = serde_json::to_vec_pretty(value).expect("a command's result serializes");
    text.push(b'\n');
    write_all(&text);
}

#[allow(clippy::disallowed_methods)] // the one writer of a command's result
fn write_all(bytes: &[u8]) {
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout.write_all(bytes).and_then(|()| stdout.flush())
        && error.kind() != std::io::ErrorKind::BrokenPipe
    {
        tracing::debug!(%error, "cannot write the result on stdout");
    }
}
