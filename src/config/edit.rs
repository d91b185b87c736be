//! Edits of the config file the dashboard makes: turning a server or a tool on or off for a
//! profile. The file stays the one truth: the edit is made to its text as a TOML document
//! (`toml_edit`), so comments, order and formatting survive, and the watcher applies it like any
//! other save.

use std::fmt;

use toml_edit::{Array, DocumentMut, Item, Table, Value};

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
    /// The file is not valid TOML, or a table the edit needs has another shape.
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

/// The file `text` with `target` turned `on` for the profile `profile`, whose servers are
/// `all_servers` when the profile names none. The profile's table is added if missing.
pub fn switch(
    text: &str,
    profile: &str,
    all_servers: &[&str],
    target: Target<'_>,
    on: bool,
) -> Result<String, EditError> {
    let mut document: DocumentMut = text
        .parse()
        .map_err(|error| EditError::Shape(format!("the config file is not valid TOML: {error}")))?;
    let table = profile_table(&mut document, profile)?;
    match target {
        Target::Server(server) => switch_server(table, all_servers, server, on)?,
        Target::Tool { exposed, original } => switch_tool(table, exposed, original, on)?,
    }
    Ok(document.to_string())
}

/// `[profiles.NAME]`, made (after the last table) if the file has none.
fn profile_table<'d>(
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

/// The string array `key` of `table`, made empty if missing.
fn strings<'t>(table: &'t mut Table, key: &str) -> Result<&'t mut Array, EditError> {
    table
        .entry(key)
        .or_insert_with(|| Item::Value(Value::Array(Array::new())))
        .as_array_mut()
        .ok_or_else(|| EditError::Shape(format!("`{key}` must be an array of strings")))
}

fn contains(array: &Array, text: &str) -> bool {
    array.iter().any(|value| value.as_str() == Some(text))
}

fn remove_all(array: &mut Array, texts: &[&str]) {
    array.retain(|value| !value.as_str().is_some_and(|value| texts.contains(&value)));
}

fn switch_server(
    table: &mut Table,
    all_servers: &[&str],
    server: &str,
    on: bool,
) -> Result<(), EditError> {
    let had_list = table.contains_key("servers");
    let servers = strings(table, "servers")?;
    if !had_list {
        servers.extend(all_servers.iter().copied());
    }
    if on {
        if !contains(servers, server) {
            servers.push(server);
        }
    } else {
        remove_all(servers, &[server]);
    }
    Ok(())
}

fn switch_tool(
    table: &mut Table,
    exposed: &str,
    original: &str,
    on: bool,
) -> Result<(), EditError> {
    let names = [exposed, original];
    let matching = |array: &Array| {
        array
            .iter()
            .filter_map(Value::as_str)
            .find(|glob| names.iter().any(|name| super::glob_match(glob, name)))
            .map(str::to_owned)
    };
    if !on {
        if let Some(tools) = table.get_mut("tools").and_then(Item::as_array_mut) {
            remove_all(tools, &names);
        }
        let excluded = strings(table, "exclude_tools")?;
        if !contains(excluded, exposed) {
            excluded.push(exposed);
        }
        return Ok(());
    }
    if let Some(excluded) = table.get_mut("exclude_tools").and_then(Item::as_array_mut) {
        remove_all(excluded, &names);
        if let Some(glob) = matching(excluded) {
            return Err(EditError::Pattern(format!(
                "the pattern `{glob}` in exclude_tools still leaves {exposed} out; change it in \
                 the config file"
            )));
        }
    }
    if let Some(tools) = table.get_mut("tools").and_then(Item::as_array_mut)
        && !tools.is_empty()
        && matching(tools).is_none()
    {
        tools.push(exposed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# My servers.\n[servers.fs]\ncommand = \"fs\" # the files\n\n\
                        [servers.git]\ncommand = \"git-mcp\"\n";

    #[test]
    fn turning_a_tool_off_and_on_keeps_every_comment_and_line() {
        let off = switch(
            FILE,
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
        let off = switch(FILE, "work", &["fs", "git"], Target::Server("fs"), false).unwrap();
        assert!(
            off.ends_with("[profiles.work]\nservers = [\"git\"]\n"),
            "{off}"
        );
        let on = switch(&off, "work", &["fs", "git"], Target::Server("fs"), true).unwrap();
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
        let broken = switch("servers = 1\n[", "p", &[], Target::Server("fs"), true);
        assert!(matches!(broken, Err(EditError::Shape(_))), "{broken:?}");
    }
}
