//! Search mode (`discovery = "search"` in a profile): instead of every tool's definition on every
//! turn, the profile lists two tools of Switchboard's own (`tools.rs`): `search_tools`, which ranks
//! the profile's tools for a query (`rank.rs`) and returns their definitions, and `call_tool`,
//! which calls one by name; and the tools the profile always lists. Every other tool can still be
//! called by its name directly.

use serde_json::Value;
use serde_json::value::RawValue;

use super::tools::{CALL_TOOL, DEFAULT_LIMIT, MAX_LIMIT, SEARCH_TOOL};
use crate::catalog::MergedCatalog;
use crate::reply::invalid_params;
use crate::rewrite::{ObjectEntries, json_string};
use wire::jsonrpc::ErrorObject;

/// What a `tools/call` of one of the two tools becomes.
pub(crate) enum Intercepted {
    /// `search_tools`: its answer.
    Answer(Result<String, ErrorObject>),
    /// `call_tool`: the params of the call of the tool it names.
    Call(Box<RawValue>),
}

/// For a `tools/call` with `params` in a profile in search mode, naming one of the two tools:
/// what to do instead. `None` for any other call.
pub(crate) fn intercept(catalog: &MergedCatalog, params: &RawValue) -> Option<Intercepted> {
    let search = catalog.search.as_ref()?;
    let mut entries = ObjectEntries::parse(params.get()).ok()?;
    let name = entries.get_str("name")?;
    if name != SEARCH_TOOL && name != CALL_TOOL {
        return None;
    }
    // Read as raw entries: `call_tool`'s inner arguments go to the tool as the model wrote them
    // (`1.50` stays `1.50`, and no number is rounded through a double).
    let arguments_text = entries
        .get("arguments")
        .map_or_else(|| "{}".to_owned(), |arguments| arguments.get().to_owned());
    let Ok(arguments) = ObjectEntries::parse(&arguments_text) else {
        return Some(Intercepted::Answer(Err(invalid_params(
            "arguments must be an object",
        ))));
    };
    if name == CALL_TOOL {
        let Some(target) = arguments.get_str("name") else {
            return Some(Intercepted::Answer(Err(invalid_params(format!(
                "{CALL_TOOL} needs the name of a tool, as {SEARCH_TOOL} gave it"
            )))));
        };
        if catalog.app_only.contains(target.as_ref()) {
            return Some(Intercepted::Answer(Err(invalid_params(format!(
                "{target} is for its MCP App's view to call, not the model"
            )))));
        }
        let inner = arguments.get("arguments").map_or_else(
            || RawValue::from_string("{}".to_owned()).expect("JSON"),
            ToOwned::to_owned,
        );
        entries.set("name", json_string(&target));
        entries.set("arguments", inner);
        return Some(Intercepted::Call(entries.into_raw()));
    }
    // `search_tools`' own arguments are Switchboard's to read.
    let Ok(arguments) = serde_json::from_str::<serde_json::Map<String, Value>>(&arguments_text)
    else {
        return Some(Intercepted::Answer(Err(invalid_params(
            "arguments must be an object",
        ))));
    };
    let Some(query) = arguments.get("query").and_then(Value::as_str) else {
        return Some(Intercepted::Answer(Err(invalid_params(format!(
            "{SEARCH_TOOL} needs a query"
        )))));
    };
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_LIMIT, |limit| (limit as usize).clamp(1, MAX_LIMIT));
    // The definitions as `tools/list` would send them, put together without being read.
    let hits = search.index().search(query, limit);
    let definitions: Vec<&str> = hits
        .iter()
        .filter_map(|hit| Some(search.definitions.get(&hit.name)?.json.as_str()))
        .collect();
    let tools = format!("[{}]", definitions.join(","));
    let text = if definitions.is_empty() {
        format!("No tool matches {query:?}; search again with other words.")
    } else {
        tools.clone()
    };
    let text = serde_json::to_string(&text).expect("a string is JSON");
    Some(Intercepted::Answer(Ok(format!(
        r#"{{"content":[{{"type":"text","text":{text}}}],"structuredContent":{{"tools":{tools}}}}}"#
    ))))
}
