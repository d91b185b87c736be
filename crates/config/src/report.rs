//! Collects diagnostics and turns byte offsets into the lines and columns users see.

use std::path::{Path, PathBuf};

use super::{Diagnostic, Severity};

pub(super) struct Reporter<'t> {
    file: PathBuf,
    text: &'t str,
    /// Byte offset where each line starts; the first line starts at 0.
    line_starts: Vec<usize>,
    diagnostics: Vec<Diagnostic>,
}

impl<'t> Reporter<'t> {
    pub(super) fn new(file: &Path, text: &'t str) -> Self {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(offset, _)| offset + 1))
            .collect();
        Reporter {
            file: file.to_path_buf(),
            text,
            line_starts,
            diagnostics: Vec::new(),
        }
    }

    pub(super) fn error(&mut self, offset: usize, field: &str, message: impl Into<String>) {
        self.push(Severity::Error, offset, field, message.into());
    }

    pub(super) fn warning(&mut self, offset: usize, field: &str, message: impl Into<String>) {
        self.push(Severity::Warning, offset, field, message.into());
    }

    pub(super) fn n_errors(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.severity == Severity::Error)
            .count()
    }

    /// The 1-based line that holds byte `offset`.
    pub(super) fn line_of(&self, offset: usize) -> usize {
        self.position(offset).0
    }

    /// The byte offset serde_json means by a line and a column, which counts bytes and is 0
    /// when the error is at the very start of a line.
    pub(super) fn offset_of_json_position(&self, line: usize, column: usize) -> usize {
        let Some(&line_start) = self.line_starts.get(line.saturating_sub(1)) else {
            return self.text.len();
        };
        (line_start + column.saturating_sub(1)).min(self.text.len())
    }

    /// All diagnostics, ordered by position so that they read top to bottom.
    pub(super) fn into_diagnostics(mut self) -> Vec<Diagnostic> {
        self.diagnostics
            .sort_by_key(|diagnostic| (diagnostic.line, diagnostic.column));
        self.diagnostics
    }

    fn push(&mut self, severity: Severity, offset: usize, field: &str, message: String) {
        let (line, column) = self.position(offset);
        self.diagnostics.push(Diagnostic {
            severity,
            file: self.file.clone(),
            line,
            column,
            field: field.to_owned(),
            message,
        });
    }

    /// 1-based line and column (in characters, as editors count them) of byte `offset`.
    pub(super) fn position(&self, offset: usize) -> (usize, usize) {
        let offset = self.text.floor_char_boundary(offset.min(self.text.len()));
        let line = self.line_starts.partition_point(|&start| start <= offset);
        let line_start = self.line_starts[line - 1];
        let column = self.text[line_start..offset].chars().count() + 1;
        (line, column)
    }
}
