//! Search mode (`discovery = "search"` in a profile): instead of every tool's definition on every
//! turn, the profile lists two tools of Switchboard's own, `search_tools`, which ranks the
//! profile's tools for a query (see [`super::search`]) and returns their definitions, and
//! `call_tool`, which calls one by name; and the tools the profile always lists. Every other tool
//! can still be called by its name directly.
//!
//! No server's tool is offered under their names, not even one that has such a name of its own
//! (see `names`: it takes the hashed form, and the clash is reported). Always-listed tools, and the two
//! tools here, carry `_meta["anthropic/alwaysLoad"]`, which clients that load tools lazily (Claude
//! Code's tool search) take as "load this one up front".

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::catalog::MergedCatalog;
use super::rewrite::ObjectEntries;
use super::session::invalid_params;
use crate::wire::jsonrpc::ErrorObject;

pub(super) const SEARCH_TOOL: &str = "search_tools";
pub(super) const CALL_TOOL: &str = "call_tool";

/// The `_meta` key clients that load tools lazily read as "load up front".
const ALWAYS_LOAD: &str = "anthropic/alwaysLoad";

/// How many definitions a search returns unless it asks otherwise, and at most.
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 20;

/// A tool's JSON with `_meta["anthropic/alwaysLoad"]` set.
pub(super) fn pinned(tool: &str) -> String {
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
pub(super) fn meta_tools(count: usize) -> [String; 2] {
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

/// What a `tools/call` of one of the two tools becomes.
pub(super) enum Intercepted {
    /// `search_tools`: its answer.
    Answer(Result<String, ErrorObject>),
    /// `call_tool`: the params of the call of the tool it names.
    Call(Box<RawValue>),
}

/// For a `tools/call` with `params` in a profile in search mode, naming one of the two tools:
/// what to do instead. `None` for any other call.
pub(super) fn intercept(catalog: &MergedCatalog, params: &RawValue) -> Option<Intercepted> {
    let search = catalog.search.as_ref()?;
    let mut entries = ObjectEntries::parse(params.get()).ok()?;
    let name = entries.get_str("name")?;
    if name != SEARCH_TOOL && name != CALL_TOOL {
        return None;
    }
    let arguments: serde_json::Map<String, Value> = match entries.get("arguments") {
        None => serde_json::Map::new(),
        Some(arguments) => match serde_json::from_str(arguments.get()) {
            Ok(arguments) => arguments,
            Err(_) => {
                return Some(Intercepted::Answer(Err(invalid_params(
                    "arguments must be an object",
                ))));
            }
        },
    };
    if name == CALL_TOOL {
        let Some(target) = arguments.get("name").and_then(Value::as_str) else {
            return Some(Intercepted::Answer(Err(invalid_params(format!(
                "{CALL_TOOL} needs the name of a tool, as {SEARCH_TOOL} gave it"
            )))));
        };
        let inner = arguments.get("arguments").cloned().unwrap_or(json!({}));
        entries.set(
            "name",
            serde_json::value::to_raw_value(target).expect("JSON"),
        );
        entries.set(
            "arguments",
            serde_json::value::to_raw_value(&inner).expect("JSON"),
        );
        return Some(Intercepted::Call(entries.into_raw()));
    }
    let Some(query) = arguments.get("query").and_then(Value::as_str) else {
        return Some(Intercepted::Answer(Err(invalid_params(format!(
            "{SEARCH_TOOL} needs a query"
        )))));
    };
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_LIMIT, |limit| (limit as usize).clamp(1, MAX_LIMIT));
    let tools: Vec<Value> = search
        .index()
        .search(query, limit)
        .into_iter()
        .filter_map(|hit| serde_json::from_str(&search.definitions.get(&hit.name)?.json).ok())
        .collect();
    let text = if tools.is_empty() {
        format!("No tool matches {query:?}; search again with other words.")
    } else {
        serde_json::to_string_pretty(&tools).expect("JSON")
    };
    let result = json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"tools": tools},
    });
    Some(Intercepted::Answer(Ok(result.to_string())))
}
