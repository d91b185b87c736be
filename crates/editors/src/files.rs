//! Reading and writing config files as they are: their encoding, JSON with comments kept, atomic
//! replacement with a backup, and a diff of what changes.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

use super::EditorError;

/// How a text file's bytes encode its text, so that it is written back the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Utf8,
    Utf8Bom,
    Utf16Le,
    Utf16Be,
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
const UTF16_LE_BOM: &[u8] = b"\xFF\xFE";
const UTF16_BE_BOM: &[u8] = b"\xFE\xFF";

/// The text of `bytes`: UTF-8 (with or without a byte order mark), or UTF-16 with one.
pub(super) fn decode(path: &Path, bytes: &[u8]) -> Result<(String, Encoding), EditorError> {
    let invalid = |position, message: &str| EditorError::Invalid {
        path: path.to_path_buf(),
        position,
        message: message.to_owned(),
    };
    let utf16 = |body: &[u8], unit: fn([u8; 2]) -> u16, encoding| {
        let (pairs, odd) = body.as_chunks::<2>();
        if !odd.is_empty() {
            return Err(invalid(None, "UTF-16 text with an odd number of bytes"));
        }
        let units: Vec<u16> = pairs.iter().map(|pair| unit(*pair)).collect();
        String::from_utf16(&units)
            .map(|text| (text, encoding))
            .map_err(|_| invalid(None, "the file is not valid UTF-16"))
    };
    if let Some(body) = bytes.strip_prefix(UTF8_BOM) {
        return utf8(body, Encoding::Utf8Bom).map_err(|(line, column)| {
            invalid(Some((line, column)), "the file is not valid UTF-8")
        });
    }
    if let Some(body) = bytes.strip_prefix(UTF16_LE_BOM) {
        return utf16(body, u16::from_le_bytes, Encoding::Utf16Le);
    }
    if let Some(body) = bytes.strip_prefix(UTF16_BE_BOM) {
        return utf16(body, u16::from_be_bytes, Encoding::Utf16Be);
    }
    utf8(bytes, Encoding::Utf8).map_err(|(line, column)| {
        invalid(
            Some((line, column)),
            "the file is neither UTF-8 nor UTF-16 with a byte order mark",
        )
    })
}

/// `bytes` as UTF-8, or the line and column where it stops being UTF-8.
fn utf8(bytes: &[u8], encoding: Encoding) -> Result<(String, Encoding), (usize, usize)> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok((text.to_owned(), encoding)),
        Err(error) => {
            let valid = std::str::from_utf8(&bytes[..error.valid_up_to()])
                .expect("valid_up_to() marks the end of valid UTF-8");
            Err(line_and_column(valid, valid.len()))
        }
    }
}

/// The bytes of the file at `path`; `None` if there is none.
pub(super) fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>, EditorError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error)
            if error.kind() == io::ErrorKind::PermissionDenied
                && super::Places::of_this_machine().is_some_and(|places| places.guards(path)) =>
        {
            Err(EditorError::BlockedByPrivacy {
                path: path.to_path_buf(),
            })
        }
        Err(source) => Err(EditorError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// 1-based line and column (in characters) of byte `offset` of `text`.
pub(super) fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// `text` in `encoding`, byte order mark included.
pub(super) fn encode(text: &str, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Utf8 => text.as_bytes().to_vec(),
        Encoding::Utf8Bom => [UTF8_BOM, text.as_bytes()].concat(),
        Encoding::Utf16Le => UTF16_LE_BOM
            .iter()
            .copied()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect(),
        Encoding::Utf16Be => UTF16_BE_BOM
            .iter()
            .copied()
            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
            .collect(),
    }
}

/// What editors' JSON files may hold beyond JSON: comments and trailing commas (VS Code's
/// "JSON with comments"), and nothing looser, so a file its editor would refuse is refused here.
const JSONC: ParseOptions = ParseOptions {
    allow_comments: true,
    allow_trailing_commas: true,
    allow_loose_object_property_names: false,
    allow_missing_commas: false,
    allow_single_quoted_strings: false,
    allow_hexadecimal_numbers: false,
    allow_unary_plus_numbers: false,
    allow_bare_decimal_point_numbers: false,
    allow_non_finite_numbers: false,
    allow_extended_string_escapes: false,
};

/// An editor's JSON config (comments and trailing commas allowed) as a tree that can be changed
/// without touching anything else in the file.
pub(super) struct JsonFile {
    pub(super) path: PathBuf,
    pub(super) encoding: Encoding,
    /// The file's bytes as read; `None` if there was no file.
    pub(super) original: Option<Vec<u8>>,
    /// The text as read (empty for a new file).
    pub(super) text: String,
    root: CstRootNode,
}

impl JsonFile {
    /// Reads the file at `path`; `None` if there is none.
    pub(super) fn read(path: &Path) -> Result<Option<JsonFile>, EditorError> {
        let Some(bytes) = read_if_exists(path)? else {
            return Ok(None);
        };
        let (text, encoding) = decode(path, &bytes)?;
        JsonFile::parse(path, text, encoding, Some(bytes)).map(Some)
    }

    /// The file at `path`, or an empty one to be created there.
    pub(super) fn read_or_new(path: &Path) -> Result<JsonFile, EditorError> {
        match JsonFile::read(path)? {
            Some(file) => Ok(file),
            None => JsonFile::parse(path, String::new(), Encoding::Utf8, None),
        }
    }

    /// A file whose text was read elsewhere, as UTF-8.
    pub(super) fn from_text(path: &Path, text: String) -> Result<JsonFile, EditorError> {
        let original = Some(text.clone().into_bytes());
        JsonFile::parse(path, text, Encoding::Utf8, original)
    }

    fn parse(
        path: &Path,
        text: String,
        encoding: Encoding,
        original: Option<Vec<u8>>,
    ) -> Result<JsonFile, EditorError> {
        // A file of only whitespace is as good as none: the object created in it starts at its
        // first line.
        let source = if text.trim().is_empty() { "" } else { &text };
        let root = CstRootNode::parse(source, &JSONC).map_err(|error| EditorError::Invalid {
            path: path.to_path_buf(),
            position: Some((error.line_display(), error.column_display())),
            message: format!("not valid JSON: {}", error.kind()),
        })?;
        Ok(JsonFile {
            path: path.to_path_buf(),
            encoding,
            original,
            text,
            root,
        })
    }

    /// The object of servers under `key`, if the file has one.
    pub(super) fn servers(&self, key: &str) -> Result<Option<CstObject>, EditorError> {
        let Some(value) = self.root.value() else {
            return Ok(None);
        };
        let Some(root) = value.as_object() else {
            return Err(self.shape_error("expected a JSON object at the top level"));
        };
        match root.get(key) {
            None => Ok(None),
            Some(property) => match property.object_value() {
                Some(servers) => Ok(Some(servers)),
                None => Err(self.shape_error(&format!("\"{key}\" is not an object"))),
            },
        }
    }

    /// The object of servers under `key`, added (and the top-level object too) if missing.
    pub(super) fn servers_or_create(&self, key: &str) -> Result<CstObject, EditorError> {
        let root = self
            .root
            .object_value_or_create()
            .ok_or_else(|| self.shape_error("expected a JSON object at the top level"))?;
        root.object_value_or_create(key)
            .ok_or_else(|| self.shape_error(&format!("\"{key}\" is not an object")))
    }

    /// The text as it is now, with every change made so far.
    pub(super) fn current_text(&self) -> String {
        self.root.to_string()
    }

    fn shape_error(&self, message: &str) -> EditorError {
        EditorError::Invalid {
            path: self.path.clone(),
            position: None,
            message: message.to_owned(),
        }
    }
}

/// Every property of `object`, in file order, as plain JSON.
pub(super) fn properties(object: &CstObject) -> Vec<(String, Value)> {
    object
        .properties()
        .into_iter()
        .filter_map(|property| {
            let name = property.decoded_name()?;
            let value = property.value()?.to_serde_value()?;
            Some((name, value))
        })
        .collect()
}

/// Keys of an entry in the order people write them; any others follow in the order given.
const KEY_ORDER: &[&str] = &["type", "command", "args", "env", "cwd", "url", "headers"];

/// `value` as the tree's input, the keys of each object in [`KEY_ORDER`].
pub(super) fn cst_value(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(flag) => CstInputValue::Bool(*flag),
        Value::Number(number) => CstInputValue::Number(number.to_string()),
        Value::String(text) => CstInputValue::String(text.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(cst_value).collect()),
        Value::Object(entries) => {
            let mut entries: Vec<(&String, &Value)> = entries.iter().collect();
            entries.sort_by_key(|(key, _)| {
                KEY_ORDER
                    .iter()
                    .position(|known| known == key)
                    .unwrap_or(KEY_ORDER.len())
            });
            CstInputValue::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key.clone(), cst_value(value)))
                    .collect(),
            )
        }
    }
}

/// Copies `bytes` (the file's content as read) to `<path>.switchboard-backup-<UTC time>` with
/// the permissions of `path`, never overwriting an earlier backup; returns the copy's path.
pub(super) fn back_up(path: &Path, bytes: &[u8]) -> io::Result<PathBuf> {
    let permissions = fs::metadata(path)?.permissions();
    let stamp = utc_stamp(SystemTime::now());
    for attempt in 1u32.. {
        let suffix = match attempt {
            1 => format!("switchboard-backup-{stamp}"),
            _ => format!("switchboard-backup-{stamp}-{attempt}"),
        };
        let backup = path.with_file_name(format!(
            "{}.{suffix}",
            path.file_name().unwrap_or_default().to_string_lossy()
        ));
        match platform::files::create_new_private_file(&backup) {
            Ok(mut file) => {
                file.set_permissions(permissions.clone())?;
                file.write_all(bytes)?;
                file.sync_all()?;
                return Ok(backup);
            }
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    }
    unreachable!("some attempt finds a free name before u32 runs out")
}

/// `time` as `YYYYMMDDTHHMMSSZ`.
fn utc_stamp(time: SystemTime) -> String {
    let seconds = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let (days, of_day) = (seconds / 86_400, seconds % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60
    )
}

/// Lines of context shown around a change.
const CONTEXT_LINES: usize = 2;

/// What changes from `before` to `after`, as one hunk of a unified diff from the first to the
/// last line that differs, with a little context.
pub(super) fn diff(label: &str, before: &str, after: &str) -> String {
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    let common_start = old
        .iter()
        .zip(&new)
        .take_while(|(old, new)| old == new)
        .count();
    let common_end = old[common_start..]
        .iter()
        .rev()
        .zip(new[common_start..].iter().rev())
        .take_while(|(old, new)| old == new)
        .count();
    if common_start == old.len() && common_start == new.len() {
        return String::new();
    }
    let start = common_start.saturating_sub(CONTEXT_LINES);
    let old_end = (old.len() - common_end + CONTEXT_LINES).min(old.len());
    let new_end = (new.len() - common_end + CONTEXT_LINES).min(new.len());
    let mut out = format!(
        "--- {label}\n+++ {label}\n@@ -{},{} +{},{} @@\n",
        start + 1,
        old_end - start,
        start + 1,
        new_end - start
    );
    for line in &old[start..common_start] {
        out.push_str(&format!(" {line}\n"));
    }
    for line in &old[common_start..old.len() - common_end] {
        out.push_str(&format!("-{line}\n"));
    }
    for line in &new[common_start..new.len() - common_end] {
        out.push_str(&format!("+{line}\n"));
    }
    for line in &new[new.len() - common_end..new_end] {
        out.push_str(&format!(" {line}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_encoding_reads_and_writes_back_the_same_bytes() {
        let text = "{\r\n  // é ✓\r\n  \"a\": 1\r\n}\r\n";
        for encoding in [
            Encoding::Utf8,
            Encoding::Utf8Bom,
            Encoding::Utf16Le,
            Encoding::Utf16Be,
        ] {
            let bytes = encode(text, encoding);
            let (decoded, found) = decode(Path::new("f.json"), &bytes).expect("decodes");
            assert_eq!((decoded.as_str(), found), (text, encoding));
        }
        assert_eq!(&encode("{}", Encoding::Utf16Le), b"\xFF\xFE{\0}\0");
        assert_eq!(&encode("{}", Encoding::Utf16Be), b"\xFE\xFF\0{\0}");
    }

    #[test]
    fn bytes_that_are_not_text_are_reported_with_their_place() {
        let error = decode(Path::new("f.json"), b"{\n  \"a\": \"\xFF\"\n}").expect_err("invalid");
        assert_eq!(
            error.to_string(),
            "f.json:2:9: the file is neither UTF-8 nor UTF-16 with a byte order mark"
        );
        let error = decode(Path::new("f.json"), b"\xFF\xFE{\0}").expect_err("odd length");
        assert_eq!(
            error.to_string(),
            "f.json: UTF-16 text with an odd number of bytes"
        );
        let error = decode(Path::new("f.json"), b"\xFF\xFE\x00\xD8").expect_err("lone surrogate");
        assert_eq!(error.to_string(), "f.json: the file is not valid UTF-16");
    }

    #[test]
    fn a_syntax_error_names_its_line_and_column() {
        let error = JsonFile::parse(
            Path::new("mcp.json"),
            "{\n  \"a\": 1,\n  \"b\": }\n".to_owned(),
            Encoding::Utf8,
            None,
        )
        .err()
        .expect("invalid");
        assert!(
            error
                .to_string()
                .starts_with("mcp.json:3:8: not valid JSON: "),
            "{error}"
        );
    }

    #[test]
    fn servers_must_be_an_object_in_an_object() {
        let file = |text: &str| {
            JsonFile::parse(Path::new("m.json"), text.to_owned(), Encoding::Utf8, None)
                .expect("JSON")
        };
        let error = file("[1]")
            .servers("mcpServers")
            .expect_err("not an object");
        assert_eq!(
            error.to_string(),
            "m.json: expected a JSON object at the top level"
        );
        let error = file("{\"mcpServers\": []}")
            .servers_or_create("mcpServers")
            .expect_err("not an object");
        assert_eq!(error.to_string(), "m.json: \"mcpServers\" is not an object");
        assert!(file("  \n").servers("mcpServers").expect("none").is_none());
        let created = file("  \n");
        created.servers_or_create("servers").expect("created");
        assert_eq!(created.current_text(), "{\n  \"servers\": {}\n}\n");
    }

    #[test]
    fn entries_are_written_with_their_keys_in_the_usual_order() {
        let value =
            serde_json::json!({ "url": "u", "type": "http", "headers": { "b": "1", "a": "2" } });
        let CstInputValue::Object(entries) = cst_value(&value) else {
            panic!("an object")
        };
        let keys: Vec<&str> = entries.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(keys, ["type", "url", "headers"]);
    }

    #[test]
    fn backups_keep_the_mode_and_never_overwrite() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config.json");
        fs::write(&path, "old").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");

        let first = back_up(&path, b"old").expect("backup");
        let second = back_up(&path, b"old").expect("another backup");
        assert_ne!(first, second);
        for backup in [&first, &second] {
            assert_eq!(fs::read(backup).expect("read"), b"old");
            assert_eq!(mode(backup), 0o640);
        }
        let name = first.file_name().expect("a name").to_string_lossy();
        assert!(
            name.starts_with("config.json.switchboard-backup-"),
            "{name}"
        );
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }

    #[test]
    fn timestamps_are_utc_calendar_times() {
        let at = |seconds| utc_stamp(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds));
        assert_eq!(at(0), "19700101T000000Z");
        assert_eq!(at(951_782_400), "20000229T000000Z");
        assert_eq!(at(1_795_459_434), "20261123T184354Z");
    }

    #[test]
    fn the_diff_shows_changed_lines_with_context() {
        let before = "a\nb\nc\nd\ne\nf\n";
        let after = "a\nb\nc\nX\nY\ne\nf\n";
        assert_eq!(
            diff("f", before, after),
            "--- f\n+++ f\n@@ -2,5 +2,6 @@\n b\n c\n-d\n+X\n+Y\n e\n f\n"
        );
        assert_eq!(diff("f", before, before), "");
        assert_eq!(
            diff("f", "", "{}\n"),
            "--- f\n+++ f\n@@ -1,0 +1,1 @@\n+{}\n"
        );
        assert_eq!(
            diff("f", "a\r\nb\r\n", "a\r\nb\r\nc\r\n"),
            "--- f\n+++ f\n@@ -1,2 +1,3 @@\n a\n b\n+c\n"
        );
    }
}
