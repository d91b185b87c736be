//! The config parser (`crates/config/`): any text, read as TOML and as the Claude Desktop JSON
//! form.
//!
//! Invariants: nothing panics; every diagnostic names the file and a position inside the text
//! (a line that exists, a column at most one past that line's last character).

#![no_main]

use std::path::Path;

use config::{ConfigError, Diagnostic};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    for name in ["fuzz.toml", "fuzz.json"] {
        let path = Path::new(name);
        let diagnostics = match config::parse(path, text) {
            Ok(config) => config.diagnostics,
            Err(ConfigError::Invalid { diagnostics, .. }) => {
                assert!(!diagnostics.is_empty(), "{name}: rejected without a reason");
                diagnostics
            }
            Err(error) => panic!("{name}: parsing text does no IO that can fail: {error}"),
        };
        for diagnostic in &diagnostics {
            check_position(path, text, diagnostic);
        }
    }
});

fn check_position(path: &Path, text: &str, diagnostic: &Diagnostic) {
    assert_eq!(diagnostic.file, path);
    assert!(!diagnostic.message.is_empty(), "{diagnostic}: no message");
    let lines: Vec<&str> = text.split('\n').collect();
    assert!(
        (1..=lines.len()).contains(&diagnostic.line),
        "{diagnostic}: line {} of a text of {} lines",
        diagnostic.line,
        lines.len()
    );
    let line = lines[diagnostic.line - 1];
    let n_chars = line.chars().count();
    assert!(
        (1..=n_chars + 1).contains(&diagnostic.column),
        "{diagnostic}: column {} of a line of {n_chars} characters",
        diagnostic.column
    );
}
