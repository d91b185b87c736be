//! The tools search mode lists: Switchboard's own `search_tools` and `call_tool`, and what marks a
//! tool the profile always lists ("always load").
//!
//! No server's tool is offered under their names, not even one that has such a name of its own
//! (see `names`: it takes the hashed form, and the clash is reported). Always-listed tools, and the
//! two tools here, carry `_meta["anthropic/alwaysLoad"]`, which clients that load tools lazily (Claude
//! Code's tool search) take as "load this one up front".

use serde_json::{Value, json};

use crate::rewrite::ObjectEntries;

pub(crate) const SEARCH_TOOL: &str = "search_tools";
pub(crate) const CALL_TOOL: &str = "call_tool";

/// The `_meta` key clients that load tools lazily read as "load up front".
const ALWAYS_LOAD: &str = "anthropic/alwaysLoad";

/// How many definitions a search returns unless it asks otherwise, and at most.
pub(super) const DEFAULT_LIMIT: usize = 5;
pub(super) const MAX_LIMIT: usize = 20;

/// A tool's JSON with `_meta["anthropic/alwaysLoad"]` set.
pub(crate) fn always_loaded(tool: &str) -> String {
    let Ok(mut entries) = ObjectEntries::parse(tool) else {
        return tool.to_owned();
    };
    let mut meta: serde_json::Map<String, Value> = entries
        .get("_meta")
        .and_then(|meta| serde_json::from_str(meta.get()).ok())
        .unwrap_or_default();
    meta.insert(ALWAYS_LOAD.to_owned(), Value::Bool(true));
    let meta = serde_json::value::to_raw_value(&meta).expect("JSON");
    entries.set("_meta", meta);
    entries.to_json()
}

/// The definitions of `search_tools` and `call_tool`, for a profile of `count` tools.
pub(crate) fn meta_tools(count: usize) -> [String; 2] {
    let search = json!({
        "name": SEARCH_TOOL,
        "title": "Search tools",
        "description": format!(
            "Finds the tools that fit a task among the {count} tools of the servers behind \
             Switchboard, and returns their definitions (name, description, input schema), best \
             first. Call the one you choose with {CALL_TOOL}. Search again with other words if \
             none fits."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do, in a few words"},
                "limit": {
                    "type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                    "description": format!("How many tools to return (default {DEFAULT_LIMIT})"),
                },
            },
            "required": ["query"],
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false},
        "_meta": {ALWAYS_LOAD: true},
    });
    let call = json!({
        "name": CALL_TOOL,
        "title": "Call a tool",
        "description": format!(
            "Calls a tool that {SEARCH_TOOL} returned, by its name, with the arguments its input \
             schema describes; answers what the tool answers."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name, as search_tools gave it"},
                "arguments": {"type": "object", "description": "The tool's arguments"},
            },
            "required": ["name"],
        },
        "_meta": {ALWAYS_LOAD: true},
    });
    [search.to_string(), call.to_string()]
}
