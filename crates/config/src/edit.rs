//! Edits of the config file the dashboard makes: turning a server or a tool on or off for a
//! profile, and requiring `/mcp`'s token. The file stays the one truth: the edit is made to its text as a document, a TOML one
//! (`toml_edit`) or, for the JSON form, a JSON syntax tree (`jsonc-parser`), so comments, order
//! and formatting survive, and the watcher applies it like any other save.

use std::fmt;

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use toml_edit::{Array, DocumentMut, Item, Table, Value};

use super::Format;

/// What to turn on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// A server, in the profile's `servers`.
    Server(&'a str),
    /// A tool by its exposed name, with the server's own name for it.
    Tool { exposed: &'a str, original: &'a str },
}

/// Why an edit cannot be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// The file is not valid TOML or JSON, or a table the edit needs has another shape.
    Shape(String),
    /// A pattern the dashboard cannot change (a glob) keeps the tool off.
    Pattern(String),
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::Shape(message) | EditError::Pattern(message) => f.write_str(message),
        }
    }
}

/// The file `text`, in `format`, with `target` turned `on` for the profile `profile`, whose
/// servers are `all_servers` when the profile names none. The profile's table is added if
/// missing (after the last table in TOML, as the last key of `"profiles"` in JSON).
pub fn switch(
    text: &str,
    format: Format,
    profile: &str,
    all_servers: &[&str],
    target: Target<'_>,
    on: bool,
) -> Result<String, EditError> {
    match format {
        Format::Toml => {
            let mut document: DocumentMut = text.parse().map_err(|error| {
                EditError::Shape(format!("the config file is not valid TOML: {error}"))
            })?;
            let mut lists = TomlLists(toml_profile(&mut document, profile)?);
            apply(&mut lists, all_servers, target, on)?;
            Ok(document.to_string())
        }
        Format::Json => {
            let root = CstRootNode::parse(text, &ParseOptions::default()).map_err(|error| {
                EditError::Shape(format!("the config file is not valid JSON: {error}"))
            })?;
            let mut lists = JsonLists(json_profile(&root, profile)?);
            apply(&mut lists, all_servers, target, on)?;
            Ok(root.to_string())
        }
    }
}

/// The TOML file `text` with `require_token = true` in its `[endpoint]` table, which is added
/// if missing. Only the TOML form has an `[endpoint]`.
pub fn require_token(text: &str) -> Result<String, EditError> {
    let mut document: DocumentMut = text
        .parse()
        .map_err(|error| EditError::Shape(format!("the config file is not valid TOML: {error}")))?;
    let endpoint = document
        .entry("endpoint")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| EditError::Shape("`endpoint` is not a table".to_owned()))?;
    endpoint.insert("require_token", toml_edit::value(true));
    Ok(document.to_string())
}

/// The file `text` with a server `name` added at its end (`[servers.NAME]` in TOML, under
/// `comment`; the last key of `"mcpServers"` in JSON, which has no comments). `entry`'s values
/// are strings, lists of strings and tables of strings. Every byte before it stays as it was.
pub fn add_server(
    text: &str,
    format: Format,
    name: &str,
    entry: &serde_json::Map<String, serde_json::Value>,
    comment: &str,
) -> Result<String, EditError> {
    match format {
        Format::Toml => {
            text.parse::<DocumentMut>().map_err(|error| {
                EditError::Shape(format!("the config file is not valid TOML: {error}"))
            })?;
            let mut table = Table::new();
            let prefix: String = comment.lines().map(|line| format!("# {line}\n")).collect();
            table.decor_mut().set_prefix(format!("\n{prefix}"));
            for (key, value) in entry {
                table.insert(key, Item::Value(toml_value(value)));
            }
            let mut servers = Table::new();
            servers.set_implicit(true);
            servers.insert(name, Item::Table(table));
            let mut document = DocumentMut::new();
            document.insert("servers", Item::Table(servers));
            let addition = document.to_string();
            let crlf = text.contains("\r\n");
            let mut out = text.to_owned();
            let addition = if out.trim().is_empty() {
                out.clear();
                addition.trim_start_matches('\n').to_owned()
            } else {
                if !out.ends_with('\n') {
                    out.push_str(if crlf { "\r\n" } else { "\n" });
                }
                addition
            };
            match crlf {
                true => out.push_str(&addition.replace('\n', "\r\n")),
                false => out.push_str(&addition),
            }
            Ok(out)
        }
        Format::Json => {
            let source = if text.trim().is_empty() { "{}" } else { text };
            let root = CstRootNode::parse(source, &ParseOptions::default()).map_err(|error| {
                EditError::Shape(format!("the config file is not valid JSON: {error}"))
            })?;
            let servers = root
                .object_value_or_create()
                .and_then(|top| top.object_value_or_create("mcpServers"))
                .ok_or_else(|| EditError::Shape("\"mcpServers\" must be an object".to_owned()))?;
            servers.append(name, json_input(&serde_json::Value::Object(entry.clone())));
            Ok(root.to_string())
        }
    }
}

/// The file `text` without the server `name` (and in TOML the comments above its table), nor
/// its name in any profile's `servers`.
pub fn remove_server(text: &str, format: Format, name: &str) -> Result<String, EditError> {
    let missing = || EditError::Shape(format!("the config has no server `{name}`"));
    match format {
        Format::Toml => {
            let mut document: DocumentMut = text.parse().map_err(|error| {
                EditError::Shape(format!("the config file is not valid TOML: {error}"))
            })?;
            document
                .get_mut("servers")
                .and_then(Item::as_table_like_mut)
                .and_then(|servers| servers.remove(name))
                .ok_or_else(missing)?;
            if let Some(profiles) = document
                .get_mut("profiles")
                .and_then(Item::as_table_like_mut)
            {
                for (_, profile) in profiles.iter_mut() {
                    if let Some(servers) = profile
                        .as_table_like_mut()
                        .and_then(|profile| profile.get_mut("servers"))
                        .and_then(Item::as_array_mut)
                    {
                        servers.retain(|value| value.as_str() != Some(name));
                    }
                }
            }
            Ok(with_line_ends_of(text, document.to_string()))
        }
        Format::Json => {
            let root = CstRootNode::parse(text, &ParseOptions::default()).map_err(|error| {
                EditError::Shape(format!("the config file is not valid JSON: {error}"))
            })?;
            let top = root.object_value().ok_or_else(missing)?;
            let property = top
                .object_value("mcpServers")
                .and_then(|servers| servers.get(name))
                .ok_or_else(missing)?;
            property.remove();
            if let Some(profiles) = top.object_value("profiles") {
                for profile in profiles.properties() {
                    if let Some(object) = profile.object_value() {
                        JsonLists(object).remove("servers", &[name])?;
                    }
                }
            }
            Ok(root.to_string())
        }
    }
}

/// The file `text` with argument `index` of server `name` set to `value`, and its `registry`
/// set to `registry` when given.
pub fn set_server_arg(
    text: &str,
    format: Format,
    name: &str,
    index: usize,
    value: &str,
    registry: Option<&str>,
) -> Result<String, EditError> {
    let missing = || EditError::Shape(format!("server `{name}` has no argument {index}"));
    match format {
        Format::Toml => {
            let mut document: DocumentMut = text.parse().map_err(|error| {
                EditError::Shape(format!("the config file is not valid TOML: {error}"))
            })?;
            let server = document
                .get_mut("servers")
                .and_then(Item::as_table_like_mut)
                .and_then(|servers| servers.get_mut(name))
                .and_then(Item::as_table_like_mut)
                .ok_or_else(missing)?;
            let args = server
                .get_mut("args")
                .and_then(Item::as_array_mut)
                .ok_or_else(missing)?;
            let old = args.get(index).ok_or_else(missing)?.decor().clone();
            let mut new = Value::from(value);
            *new.decor_mut() = old;
            args.replace_formatted(index, new);
            if let Some(registry) = registry
                && let Some(item) = server.get_mut("registry")
            {
                let decor = item.as_value().map(|v| v.decor().clone());
                let mut new = Value::from(registry);
                if let Some(decor) = decor {
                    *new.decor_mut() = decor;
                }
                *item = Item::Value(new);
            }
            Ok(with_line_ends_of(text, document.to_string()))
        }
        Format::Json => {
            let root = CstRootNode::parse(text, &ParseOptions::default()).map_err(|error| {
                EditError::Shape(format!("the config file is not valid JSON: {error}"))
            })?;
            let server = root
                .object_value()
                .and_then(|top| top.object_value("mcpServers"))
                .and_then(|servers| servers.object_value(name))
                .ok_or_else(missing)?;
            let property = server.get("args").ok_or_else(missing)?;
            let mut args: Vec<CstInputValue> = property
                .array_value()
                .ok_or_else(missing)?
                .elements()
                .iter()
                .map(|element| match element.to_serde_value() {
                    Some(serde_json::Value::String(text)) => CstInputValue::String(text),
                    _ => CstInputValue::Null,
                })
                .collect();
            *args.get_mut(index).ok_or_else(missing)? = CstInputValue::String(value.to_owned());
            // Rebuilt rather than cut, as `JsonLists::remove` does.
            property.set_value(CstInputValue::Array(args));
            if let (Some(registry), Some(property)) = (registry, server.get("registry")) {
                property.set_value(CstInputValue::String(registry.to_owned()));
            }
            Ok(root.to_string())
        }
    }
}

/// `edited` in the line ends of `original` (`toml_edit` writes every line end as `\n`).
fn with_line_ends_of(original: &str, edited: String) -> String {
    match original.contains("\r\n") {
        true => edited.replace("\r\n", "\n").replace('\n', "\r\n"),
        false => edited,
    }
}

fn toml_value(value: &serde_json::Value) -> Value {
    match value {
        serde_json::Value::Array(items) => Value::Array(items.iter().map(toml_value).collect()),
        serde_json::Value::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (key, value) in map {
                table.insert(key, toml_value(value));
            }
            Value::InlineTable(table)
        }
        serde_json::Value::Bool(flag) => Value::from(*flag),
        other => Value::from(
            other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned),
        ),
    }
}

fn json_input(value: &serde_json::Value) -> CstInputValue {
    match value {
        serde_json::Value::Array(items) => {
            CstInputValue::Array(items.iter().map(json_input).collect())
        }
        serde_json::Value::Object(map) => CstInputValue::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), json_input(value)))
                .collect(),
        ),
        serde_json::Value::Bool(flag) => CstInputValue::Bool(*flag),
        other => CstInputValue::String(
            other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned),
        ),
    }
}

/// The string lists of one profile (`servers`, `tools`, `exclude_tools`), in either format.
trait Lists {
    /// The strings of the list `key`; `None` if the profile has no such list.
    fn get(&self, key: &str) -> Result<Option<Vec<String>>, EditError>;
    /// Appends `texts` to the list `key`, which is made if missing.
    fn push(&mut self, key: &str, texts: &[&str]) -> Result<(), EditError>;
    /// Removes every item of the list `key` that is one of `texts`, if the list exists.
    fn remove(&mut self, key: &str, texts: &[&str]) -> Result<(), EditError>;
}

fn list_shape(key: &str) -> EditError {
    EditError::Shape(format!("`{key}` must be an array of strings"))
}

fn apply(
    lists: &mut dyn Lists,
    all_servers: &[&str],
    target: Target<'_>,
    on: bool,
) -> Result<(), EditError> {
    match target {
        Target::Server(server) => switch_server(lists, all_servers, server, on),
        Target::Tool { exposed, original } => switch_tool(lists, exposed, original, on),
    }
}

fn switch_server(
    lists: &mut dyn Lists,
    all_servers: &[&str],
    server: &str,
    on: bool,
) -> Result<(), EditError> {
    let Some(servers) = lists.get("servers")? else {
        // The profile offered every server: it now lists them, this one in or out.
        let mut listed: Vec<&str> = all_servers
            .iter()
            .copied()
            .filter(|name| *name != server)
            .collect();
        if on {
            listed.push(server);
        }
        return lists.push("servers", &listed);
    };
    if !on {
        return lists.remove("servers", &[server]);
    }
    if !servers.iter().any(|name| name == server) {
        lists.push("servers", &[server])?;
    }
    Ok(())
}

fn switch_tool(
    lists: &mut dyn Lists,
    exposed: &str,
    original: &str,
    on: bool,
) -> Result<(), EditError> {
    let names = [exposed, original];
    let matching = |list: &[String]| {
        list.iter()
            .find(|glob| names.iter().any(|name| super::glob_match(glob, name)))
            .cloned()
    };
    if !on {
        lists.remove("tools", &names)?;
        let excluded = lists.get("exclude_tools")?.unwrap_or_default();
        if !excluded.iter().any(|name| name == exposed) {
            lists.push("exclude_tools", &[exposed])?;
        }
        return Ok(());
    }
    lists.remove("exclude_tools", &names)?;
    if let Some(glob) = lists.get("exclude_tools")?.as_deref().and_then(matching) {
        return Err(EditError::Pattern(format!(
            "the pattern `{glob}` in exclude_tools still leaves {exposed} out; change it in \
             the config file"
        )));
    }
    if let Some(tools) = lists.get("tools")?
        && !tools.is_empty()
        && matching(&tools).is_none()
    {
        lists.push("tools", &[exposed])?;
    }
    Ok(())
}

/// `[profiles.NAME]`, made (after the last table) if the file has none.
fn toml_profile<'d>(
    document: &'d mut DocumentMut,
    profile: &str,
) -> Result<&'d mut Table, EditError> {
    let shape = |what: &str| EditError::Shape(format!("{what} must be a table"));
    let profiles = document
        .entry("profiles")
        .or_insert_with(|| {
            let mut profiles = Table::new();
            profiles.set_implicit(true);
            Item::Table(profiles)
        })
        .as_table_mut()
        .ok_or_else(|| shape("`profiles`"))?;
    profiles
        .entry(profile)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or_else(|| shape(&format!("`profiles.{profile}`")))
}

struct TomlLists<'t>(&'t mut Table);

impl TomlLists<'_> {
    fn array(&mut self, key: &str) -> Result<Option<&mut Array>, EditError> {
        match self.0.get_mut(key) {
            None => Ok(None),
            Some(item) => item.as_array_mut().map(Some).ok_or_else(|| list_shape(key)),
        }
    }
}

impl Lists for TomlLists<'_> {
    fn get(&self, key: &str) -> Result<Option<Vec<String>>, EditError> {
        match self.0.get(key) {
            None => Ok(None),
            Some(item) => {
                let array = item.as_array().ok_or_else(|| list_shape(key))?;
                Ok(Some(
                    array
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                ))
            }
        }
    }

    fn push(&mut self, key: &str, texts: &[&str]) -> Result<(), EditError> {
        let array = self
            .0
            .entry(key)
            .or_insert_with(|| Item::Value(Value::Array(Array::new())))
            .as_array_mut()
            .ok_or_else(|| list_shape(key))?;
        array.extend(texts.iter().copied());
        Ok(())
    }

    fn remove(&mut self, key: &str, texts: &[&str]) -> Result<(), EditError> {
        if let Some(array) = self.array(key)? {
            array.retain(|value| !value.as_str().is_some_and(|value| texts.contains(&value)));
        }
        Ok(())
    }
}

/// `"profiles": {"NAME": {…}}`, each made (as the last key) if missing.
fn json_profile(root: &CstRootNode, profile: &str) -> Result<CstObject, EditError> {
    let shape = |what: &str| EditError::Shape(format!("{what} must be an object"));
    let top = root
        .object_value_or_create()
        .ok_or_else(|| shape("the config file"))?;
    top.object_value_or_create("profiles")
        .ok_or_else(|| shape("\"profiles\""))?
        .object_value_or_create(profile)
        .ok_or_else(|| shape(&format!("\"profiles\".{profile:?}")))
}

struct JsonLists(CstObject);

impl Lists for JsonLists {
    fn get(&self, key: &str) -> Result<Option<Vec<String>>, EditError> {
        let Some(property) = self.0.get(key) else {
            return Ok(None);
        };
        let array = property.array_value().ok_or_else(|| list_shape(key))?;
        Ok(Some(
            array
                .elements()
                .iter()
                .filter_map(|element| match element.to_serde_value() {
                    Some(serde_json::Value::String(text)) => Some(text),
                    _ => None,
                })
                .collect(),
        ))
    }

    fn push(&mut self, key: &str, texts: &[&str]) -> Result<(), EditError> {
        let array = self
            .0
            .array_value_or_create(key)
            .ok_or_else(|| list_shape(key))?;
        for text in texts {
            array.append(CstInputValue::String((*text).to_owned()));
        }
        Ok(())
    }

    fn remove(&mut self, key: &str, texts: &[&str]) -> Result<(), EditError> {
        let Some(property) = self.0.get(key) else {
            return Ok(());
        };
        let array = property.array_value().ok_or_else(|| list_shape(key))?;
        // Rebuilt rather than cut: removing an element leaves its spacing behind. The JSON form
        // is plain JSON, so there are no comments inside to lose.
        let kept: Vec<CstInputValue> = array
            .elements()
            .iter()
            .filter_map(|element| match element.to_serde_value() {
                Some(serde_json::Value::String(text)) => Some(text),
                _ => None,
            })
            .filter(|text| !texts.contains(&text.as_str()))
            .map(CstInputValue::String)
            .collect();
        property.set_value(CstInputValue::Array(kept));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# My servers.\n[servers.fs]\ncommand = \"fs\" # the files\n\n\
                        [servers.git]\ncommand = \"git-mcp\"\n";

    #[test]
    fn requiring_the_token_adds_one_line_and_keeps_the_rest() {
        assert_eq!(
            require_token(FILE).unwrap(),
            format!("{FILE}\n[endpoint]\nrequire_token = true\n")
        );
        let with_endpoint =
            "[endpoint] # mine\nlisten = \"127.0.0.1:9000\"\nrequire_token = false\n";
        assert_eq!(
            require_token(with_endpoint).unwrap(),
            "[endpoint] # mine\nlisten = \"127.0.0.1:9000\"\nrequire_token = true\n"
        );
        let config = super::super::parse(
            std::path::Path::new("config.toml"),
            &require_token("# nothing yet\n").unwrap(),
        )
        .expect("valid");
        assert_eq!(config.endpoint.require_token, Some(true));
        assert!(config.diagnostics.is_empty(), "{:?}", config.diagnostics);
        assert!(matches!(
            require_token("endpoint = 3\n"),
            Err(EditError::Shape(_))
        ));
    }

    #[test]
    fn turning_a_tool_off_and_on_keeps_every_comment_and_line() {
        let off = switch(
            FILE,
            Format::Toml,
            "default",
            &["fs", "git"],
            Target::Tool {
                exposed: "fs__delete",
                original: "delete",
            },
            false,
        )
        .unwrap();
        assert_eq!(
            off,
            format!("{FILE}\n[profiles.default]\nexclude_tools = [\"fs__delete\"]\n")
        );
        let on = switch(
            &off,
            Format::Toml,
            "default",
            &["fs", "git"],
            Target::Tool {
                exposed: "fs__delete",
                original: "delete",
            },
            true,
        )
        .unwrap();
        assert_eq!(
            on,
            format!("{FILE}\n[profiles.default]\nexclude_tools = []\n")
        );
    }

    #[test]
    fn servers_are_listed_when_first_turned_off() {
        let off = switch(
            FILE,
            Format::Toml,
            "work",
            &["fs", "git"],
            Target::Server("fs"),
            false,
        )
        .unwrap();
        assert!(
            off.ends_with("[profiles.work]\nservers = [\"git\"]\n"),
            "{off}"
        );
        let on = switch(
            &off,
            Format::Toml,
            "work",
            &["fs", "git"],
            Target::Server("fs"),
            true,
        )
        .unwrap();
        assert!(
            on.ends_with("[profiles.work]\nservers = [\"git\", \"fs\"]\n"),
            "{on}"
        );
    }

    #[test]
    fn a_tool_kept_off_by_a_glob_is_refused_and_an_allow_list_grows() {
        let text =
            format!("{FILE}\n[profiles.p]\ntools = [\"git__*\"]\nexclude_tools = [\"*delete*\"]\n");
        let refused = switch(
            &text,
            Format::Toml,
            "p",
            &[],
            Target::Tool {
                exposed: "fs__delete",
                original: "delete",
            },
            true,
        );
        assert!(
            matches!(&refused, Err(EditError::Pattern(message)) if message.contains("`*delete*`")),
            "{refused:?}"
        );
        let grown = switch(
            &text,
            Format::Toml,
            "p",
            &[],
            Target::Tool {
                exposed: "fs__read",
                original: "read",
            },
            true,
        )
        .unwrap();
        assert!(
            grown.contains("tools = [\"git__*\", \"fs__read\"]"),
            "{grown}"
        );
        let broken = switch(
            "servers = 1\n[",
            Format::Toml,
            "p",
            &[],
            Target::Server("fs"),
            true,
        );
        assert!(matches!(broken, Err(EditError::Shape(_))), "{broken:?}");
    }

    #[test]
    fn the_json_form_is_edited_in_place_keeping_other_keys_and_formatting() {
        let file = "{\n    \"mcpServers\": {\n        \"fs\": { \"command\": \"fs\" },\n        \
                    \"git\": { \"command\": \"git-mcp\" }\n    },\n    \"globalShortcut\": \"Ctrl+Space\"\n}\n";
        let tool = Target::Tool {
            exposed: "fs__delete",
            original: "delete",
        };
        let servers = ["fs", "git"];
        let off = switch(file, Format::Json, "default", &servers, tool, false).unwrap();
        let work = Target::Server("fs");
        let off = switch(&off, Format::Json, "work", &servers, work, false).unwrap();
        let profiles = "    \"profiles\": {\n        \"default\": {\n            \
                        \"exclude_tools\": [\"fs__delete\"]\n        },\n        \"work\": {\n            \
                        \"servers\": [\"git\"]\n        }\n    }\n}\n";
        let before = file.strip_suffix("\n}\n").expect("the sample's end");
        assert_eq!(off, format!("{before},\n{profiles}"));
        let on = switch(&off, Format::Json, "default", &servers, tool, true).unwrap();
        assert_eq!(on, off.replace("[\"fs__delete\"]", "[]"));
        let back = switch(&on, Format::Json, "work", &servers, work, true).unwrap();
        assert_eq!(back, on.replace("[\"git\"]", "[\"git\", \"fs\"]"));
        let broken = switch(
            "{\"profiles\": 1}",
            Format::Json,
            "p",
            &[],
            Target::Server("fs"),
            true,
        );
        assert!(matches!(broken, Err(EditError::Shape(_))), "{broken:?}");
        let broken = switch("{", Format::Json, "p", &[], Target::Server("fs"), true);
        assert!(matches!(broken, Err(EditError::Shape(_))), "{broken:?}");
    }
}
