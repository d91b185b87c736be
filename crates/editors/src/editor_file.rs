//! An editor's MCP config as it is on disk, JSON with comments (most editors) or TOML (Codex
//! CLI): its server entries read as plain JSON values, and entries changed in place, so that
//! every byte outside them stays as it was.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table};

use super::EditorError;
use super::files::{self, Encoding, JsonFile};

/// How an editor's config file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileFormat {
    /// JSON, with comments and trailing commas allowed.
    Json,
    Toml,
}

/// An editor's config file, ready to be read and changed.
pub(super) enum EditorFile {
    Json(JsonFile),
    Toml(TomlFile),
}

impl EditorFile {
    /// Reads the file at `path`; `None` if there is none.
    pub(super) fn read(path: &Path, format: FileFormat) -> Result<Option<EditorFile>, EditorError> {
        Ok(match format {
            FileFormat::Json => JsonFile::read(path)?.map(EditorFile::Json),
            FileFormat::Toml => TomlFile::read(path)?.map(EditorFile::Toml),
        })
    }

    /// The file at `path`, or an empty one to be created there.
    pub(super) fn read_or_new(path: &Path, format: FileFormat) -> Result<EditorFile, EditorError> {
        match EditorFile::read(path, format)? {
            Some(file) => Ok(file),
            None => Ok(match format {
                FileFormat::Json => EditorFile::Json(JsonFile::read_or_new(path)?),
                FileFormat::Toml => EditorFile::Toml(TomlFile::empty(path)),
            }),
        }
    }

    /// The text of a file that holds only the entry `name` of the servers under `key`: what to
    /// merge into the editor's file by hand.
    pub(super) fn snippet(format: FileFormat, key: &str, name: &str, entry: &Value) -> String {
        let path = Path::new("");
        let mut file = match format {
            FileFormat::Json => EditorFile::Json(
                JsonFile::from_text(path, String::new()).expect("an empty file parses"),
            ),
            FileFormat::Toml => EditorFile::Toml(TomlFile::empty(path)),
        };
        file.set_entry(key, name, entry)
            .expect("an empty file takes any entry");
        file.current_text()
    }

    /// The entries of the table of servers under `key`, in file order, as plain JSON.
    pub(super) fn entries(&self, key: &str) -> Result<Vec<(String, Value)>, EditorError> {
        match self {
            EditorFile::Json(file) => Ok(match file.servers(key)? {
                Some(servers) => files::properties(&servers),
                None => Vec::new(),
            }),
            EditorFile::Toml(file) => file.entries(key),
        }
    }

    /// Sets the entry `name` of the servers under `key` to `entry`, in its place if it exists
    /// (the table of servers is added if missing); returns whether it existed.
    pub(super) fn set_entry(
        &mut self,
        key: &str,
        name: &str,
        entry: &Value,
    ) -> Result<bool, EditorError> {
        match self {
            EditorFile::Json(file) => {
                let servers = file.servers_or_create(key)?;
                Ok(match servers.get(name) {
                    Some(property) => {
                        property.set_value(files::cst_value(entry));
                        true
                    }
                    None => {
                        servers.append(name, files::cst_value(entry));
                        false
                    }
                })
            }
            EditorFile::Toml(file) => file.set_entry(key, name, entry),
        }
    }

    /// Takes the entry `name` out of the servers under `key`, with nothing else around it;
    /// returns whether there was one.
    pub(super) fn remove_entry(&mut self, key: &str, name: &str) -> Result<bool, EditorError> {
        match self {
            EditorFile::Json(file) => {
                let Some(servers) = file.servers(key)? else {
                    return Ok(false);
                };
                Ok(match servers.get(name) {
                    Some(property) => {
                        property.remove();
                        true
                    }
                    None => false,
                })
            }
            EditorFile::Toml(file) => Ok(file
                .document
                .get_mut(key)
                .and_then(Item::as_table_like_mut)
                .and_then(|servers| servers.remove(name))
                .is_some()),
        }
    }

    /// The bytes as read; `None` if there was no file.
    pub(super) fn original(&self) -> Option<&[u8]> {
        match self {
            EditorFile::Json(file) => file.original.as_deref(),
            EditorFile::Toml(file) => file.original.as_deref(),
        }
    }

    /// The text as read (empty for a new file).
    pub(super) fn text(&self) -> &str {
        match self {
            EditorFile::Json(file) => &file.text,
            EditorFile::Toml(file) => &file.text,
        }
    }

    /// The text with every change made so far.
    pub(super) fn current_text(&self) -> String {
        match self {
            EditorFile::Json(file) => file.current_text(),
            EditorFile::Toml(file) => file.document.to_string(),
        }
    }

    /// `text` as the bytes to write, in the encoding the file came in.
    pub(super) fn encode(&self, text: &str) -> Vec<u8> {
        match self {
            EditorFile::Json(file) => files::encode(text, file.encoding),
            EditorFile::Toml(_) => files::encode(text, Encoding::Utf8),
        }
    }
}

/// A TOML config (Codex CLI's `config.toml`) as a document that keeps its comments, order and
/// formatting through edits (`toml_edit`).
pub(super) struct TomlFile {
    path: PathBuf,
    original: Option<Vec<u8>>,
    text: String,
    document: DocumentMut,
}

impl TomlFile {
    fn read(path: &Path) -> Result<Option<TomlFile>, EditorError> {
        let Some(bytes) = files::read_if_exists(path)? else {
            return Ok(None);
        };
        let (text, _) = files::decode(path, &bytes)?;
        let document = text.parse::<DocumentMut>().map_err(|error| {
            let position = error
                .span()
                .map(|span| files::line_and_column(&text, span.start.min(text.len())));
            EditorError::Invalid {
                path: path.to_path_buf(),
                position,
                message: format!("not valid TOML: {}", error.message()),
            }
        })?;
        Ok(Some(TomlFile {
            path: path.to_path_buf(),
            original: Some(bytes),
            text,
            document,
        }))
    }

    fn empty(path: &Path) -> TomlFile {
        TomlFile {
            path: path.to_path_buf(),
            original: None,
            text: String::new(),
            document: DocumentMut::new(),
        }
    }

    fn entries(&self, key: &str) -> Result<Vec<(String, Value)>, EditorError> {
        let Some(servers) = self.document.get(key) else {
            return Ok(Vec::new());
        };
        let servers = servers
            .as_table_like()
            .ok_or_else(|| self.shape_error(&format!("`{key}` is not a table")))?;
        Ok(servers
            .iter()
            .map(|(name, entry)| (name.to_owned(), item_json(entry)))
            .collect())
    }

    fn set_entry(&mut self, key: &str, name: &str, entry: &Value) -> Result<bool, EditorError> {
        let Value::Object(fields) = entry else {
            unreachable!("entries Switchboard writes are objects")
        };
        let shape_error =
            self.shape_error(&format!("`{key}` is not a table of [{key}.NAME] sections"));
        let servers = self
            .document
            .entry(key)
            .or_insert_with(|| {
                let mut servers = Table::new();
                servers.set_implicit(true);
                Item::Table(servers)
            })
            .as_table_mut()
            .ok_or(shape_error)?;
        let existed = servers.contains_key(name);
        // An existing section keeps its place and the comments before it.
        let section = servers
            .entry(name)
            .or_insert_with(|| Item::Table(Table::new()));
        if !section.is_table() {
            *section = Item::Table(Table::new());
        }
        let section = section.as_table_mut().expect("made a table above");
        section.clear();
        for (field, value) in fields {
            section.insert(field, Item::Value(toml_value(value)));
        }
        Ok(existed)
    }

    fn shape_error(&self, message: &str) -> EditorError {
        EditorError::Invalid {
            path: self.path.clone(),
            position: None,
            message: message.to_owned(),
        }
    }
}

/// A TOML item as plain JSON: tables become objects (in file order), dates and times strings.
pub(crate) fn item_json(item: &Item) -> Value {
    match item {
        Item::None => Value::Null,
        Item::Value(value) => value_json(value),
        Item::Table(table) => Value::Object(
            table
                .iter()
                .map(|(key, item)| (key.to_owned(), item_json(item)))
                .collect(),
        ),
        Item::ArrayOfTables(tables) => Value::Array(
            tables
                .iter()
                .map(|table| item_json(&Item::Table(table.clone())))
                .collect(),
        ),
    }
}

fn value_json(value: &toml_edit::Value) -> Value {
    match value {
        toml_edit::Value::String(text) => Value::from(text.value().as_str()),
        toml_edit::Value::Integer(number) => Value::from(*number.value()),
        toml_edit::Value::Float(number) => Value::from(*number.value()),
        toml_edit::Value::Boolean(flag) => Value::from(*flag.value()),
        toml_edit::Value::Datetime(time) => Value::from(time.value().to_string()),
        toml_edit::Value::Array(items) => Value::Array(items.iter().map(value_json).collect()),
        toml_edit::Value::InlineTable(table) => Value::Object(
            table
                .iter()
                .map(|(key, value)| (key.to_owned(), value_json(value)))
                .collect(),
        ),
    }
}

/// Plain JSON as a TOML value: objects become inline tables. JSON's `null` has no TOML form and
/// entries Switchboard writes hold none.
pub(crate) fn toml_value(value: &Value) -> toml_edit::Value {
    match value {
        Value::Null => unreachable!("entries Switchboard writes hold no null"),
        Value::Bool(flag) => (*flag).into(),
        Value::Number(number) => match number.as_i64() {
            Some(integer) => integer.into(),
            None => number.as_f64().expect("a JSON number is an f64").into(),
        },
        Value::String(text) => text.as_str().into(),
        Value::Array(items) => {
            toml_edit::Value::Array(items.iter().map(toml_value).collect::<Array>())
        }
        Value::Object(fields) => toml_edit::Value::InlineTable(
            fields
                .iter()
                .map(|(key, value)| (key.as_str(), toml_value(value)))
                .collect::<InlineTable>(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn toml_file(text: &str) -> TomlFile {
        TomlFile {
            path: PathBuf::from("config.toml"),
            original: Some(text.as_bytes().to_vec()),
            text: text.to_owned(),
            document: text.parse().expect("valid TOML"),
        }
    }

    #[test]
    fn toml_entries_read_as_json_in_file_order() {
        let file = toml_file(
            "model = \"o4\"\n\n[mcp_servers.zeta]\ncommand = \"npx\"\nargs = [\"-y\", \"z\"]\n\
             env = { TOKEN = \"t\" }\n\n[mcp_servers.alpha]\nurl = \"https://a.example/mcp\"\n\
             startup_timeout_sec = 20\n",
        );
        let entries = file.entries("mcp_servers").expect("a table");
        assert_eq!(
            entries,
            [
                (
                    "zeta".to_owned(),
                    json!({"command": "npx", "args": ["-y", "z"], "env": {"TOKEN": "t"}})
                ),
                (
                    "alpha".to_owned(),
                    json!({"url": "https://a.example/mcp", "startup_timeout_sec": 20})
                ),
            ]
        );
        assert_eq!(file.entries("elsewhere").expect("none"), []);
        let error = toml_file("mcp_servers = 3\n")
            .entries("mcp_servers")
            .expect_err("not a table");
        assert!(
            error.to_string().contains("`mcp_servers` is not a table"),
            "{error}"
        );
    }

    #[test]
    fn a_toml_entry_is_added_at_the_end_or_replaced_in_its_place() {
        let original = "# my Codex\nmodel = \"o4\" # the model\n\n[mcp_servers.git]\ncommand = \"uvx\"\n\n\
                        # Switchboard, by hand\n[mcp_servers.switchboard]\nurl = \"http://old\"\n\n\
                        [profiles.fast]\nmodel = \"mini\"\n";
        let mut file = EditorFile::Toml(toml_file(original));
        let entry = json!({"url": "http://127.0.0.1:8765/mcp", "http_headers": {"Authorization": "Bearer t"}});
        assert!(
            file.set_entry("mcp_servers", "switchboard", &entry)
                .expect("set")
        );
        assert_eq!(
            file.current_text(),
            "# my Codex\nmodel = \"o4\" # the model\n\n[mcp_servers.git]\ncommand = \"uvx\"\n\n\
             # Switchboard, by hand\n[mcp_servers.switchboard]\nurl = \"http://127.0.0.1:8765/mcp\"\n\
             http_headers = { Authorization = \"Bearer t\" }\n\n[profiles.fast]\nmodel = \"mini\"\n"
        );

        let mut file = EditorFile::Toml(toml_file("model = \"o4\"\n"));
        assert!(
            !file
                .set_entry(
                    "mcp_servers",
                    "switchboard",
                    &json!({"url": "http://x/mcp"})
                )
                .expect("set")
        );
        assert_eq!(
            file.current_text(),
            "model = \"o4\"\n\n[mcp_servers.switchboard]\nurl = \"http://x/mcp\"\n"
        );
        assert_eq!(
            file.entries("mcp_servers").expect("a table")[0].1,
            json!({"url": "http://x/mcp"})
        );
    }

    #[test]
    fn invalid_toml_is_reported_with_its_place() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "model = \"o4\"\n[mcp_servers.a\ncommand = 1\n").expect("write");
        let error = EditorFile::read(&path, FileFormat::Toml)
            .err()
            .expect("refused");
        let text = error.to_string();
        assert!(text.contains(":2:"), "{text}");
        assert!(text.contains("not valid TOML"), "{text}");
        assert!(
            EditorFile::read(&dir.path().join("none.toml"), FileFormat::Toml)
                .expect("fine")
                .is_none()
        );
    }
}
