//! MCP Apps' views in a profile (`wire/apps.rs`): every `ui://` URI its tools name in
//! `_meta.ui.resourceUri` or its servers list as resources, and the server that serves it, so a
//! read of a view goes to its server even when it is not listed. Two servers naming the same URI
//! (two instances of one app server, say) would leave it ambiguous, so each of them offers it as
//! `ui://SERVER/…` instead: in its tools' `_meta.ui`, in its resource list, and in what a read of
//! it answers; a read of the renamed URI goes to that server with the server's own URI.

use std::collections::HashMap;
use std::sync::Arc;

use crate::hub::rewrite::{ObjectEntries, json_string};
use crate::wire::apps::{LEGACY_VIEW_KEY, VIEW_SCHEME};

/// Where a view editors know by one URI is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub backend: Arc<str>,
    /// The server's own URI for it.
    pub own: String,
}

/// The views of one profile.
#[derive(Default)]
pub struct Views {
    /// By the URI editors see.
    served: HashMap<String, View>,
    /// Backend → its own URI → the URI editors see instead, for the renamed ones.
    renamed: HashMap<Arc<str>, HashMap<String, String>>,
}

impl Views {
    /// The views from what each backend names (`backend`, its own URI), in config order.
    pub fn new(claims: impl IntoIterator<Item = (Arc<str>, String)>) -> Views {
        let mut claimants: HashMap<String, Vec<Arc<str>>> = HashMap::new();
        for (backend, uri) in claims {
            let backends = claimants.entry(uri).or_default();
            if !backends.contains(&backend) {
                backends.push(backend);
            }
        }
        let mut views = Views::default();
        for (own, backends) in claimants {
            if let [backend] = backends.as_slice() {
                let view = View {
                    backend: backend.clone(),
                    own: own.clone(),
                };
                views.served.insert(own, view);
                continue;
            }
            for backend in backends {
                let exposed = format!(
                    "{VIEW_SCHEME}{backend}/{}",
                    own.strip_prefix(VIEW_SCHEME).unwrap_or(&own)
                );
                views
                    .renamed
                    .entry(backend.clone())
                    .or_default()
                    .insert(own.clone(), exposed.clone());
                let own = own.clone();
                views.served.insert(exposed, View { backend, own });
            }
        }
        views
    }

    /// The view editors know as `uri`.
    pub fn get(&self, uri: &str) -> Option<&View> {
        self.served.get(uri)
    }

    /// The URI editors see for `backend`'s own `uri`, when it is renamed.
    pub fn renamed(&self, backend: &str, uri: &str) -> Option<&str> {
        self.renamed.get(backend)?.get(uri).map(String::as_str)
    }

    /// Whether `backend` serves a view.
    pub fn serves(&self, backend: &str) -> bool {
        self.served.values().any(|view| &*view.backend == backend)
    }

    /// Whether any view of `backend` is renamed.
    pub fn renames(&self, backend: &str) -> bool {
        self.renamed.contains_key(backend)
    }
}

/// `tool` (JSON) naming its view as `uri`, in `_meta.ui.resourceUri` and in the older
/// `_meta["ui/resourceUri"]` where it has that too.
pub fn tool_with_view(tool: &str, uri: &str) -> Option<String> {
    let mut entries = ObjectEntries::parse(tool).ok()?;
    let meta = entries.get("_meta")?.get().to_owned();
    let mut meta = ObjectEntries::parse(&meta).ok()?;
    if let Some(ui) = meta.get("ui").map(|ui| ui.get().to_owned())
        && let Ok(mut ui) = ObjectEntries::parse(&ui)
        && ui.get("resourceUri").is_some()
    {
        ui.set("resourceUri", json_string(uri));
        meta.set("ui", ui.into_raw());
    }
    if meta.get(LEGACY_VIEW_KEY).is_some() {
        meta.set(LEGACY_VIEW_KEY, json_string(uri));
    }
    entries.set("_meta", meta.into_raw());
    Some(entries.to_json())
}

/// `item` (a resource, or one of a read's contents) with its `uri` replaced.
pub fn with_uri(item: &str, uri: &str) -> Option<String> {
    let mut entries = ObjectEntries::parse(item).ok()?;
    entries.set("uri", json_string(uri));
    Some(entries.to_json())
}

/// A `resources/read` result with the contents at `own` said to be at `exposed`; anything else
/// as it came.
pub fn read_result(result: &str, own: &str, exposed: &str) -> String {
    let renamed = || {
        let mut entries = ObjectEntries::parse(result).ok()?;
        let contents: Vec<&serde_json::value::RawValue> =
            serde_json::from_str(entries.get("contents")?.get()).ok()?;
        let contents: Vec<String> = contents
            .iter()
            .map(|item| {
                let at_own = ObjectEntries::parse(item.get())
                    .ok()
                    .and_then(|entries| entries.get_str("uri").map(|uri| uri == own))
                    .unwrap_or(false);
                match at_own {
                    true => with_uri(item.get(), exposed).unwrap_or_else(|| item.get().to_owned()),
                    false => item.get().to_owned(),
                }
            })
            .collect();
        let contents =
            serde_json::value::RawValue::from_string(format!("[{}]", contents.join(",")));
        entries.set("contents", contents.ok()?);
        Some(entries.to_json())
    };
    renamed().unwrap_or_else(|| result.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_two_servers_name_is_renamed_for_each_and_the_rest_kept() {
        let claims = [
            ("clock", "ui://get-time/app.html"),
            ("clock", "ui://get-time/app.html"),
            ("clock2", "ui://get-time/app.html"),
            ("monitor", "ui://monitor/app.html"),
        ];
        let views = Views::new(
            claims
                .into_iter()
                .map(|(backend, uri)| (Arc::from(backend), uri.to_owned())),
        );
        assert_eq!(
            views.renamed("clock", "ui://get-time/app.html"),
            Some("ui://clock/get-time/app.html")
        );
        assert_eq!(
            views.renamed("clock2", "ui://get-time/app.html"),
            Some("ui://clock2/get-time/app.html")
        );
        assert_eq!(views.renamed("monitor", "ui://monitor/app.html"), None);
        assert!(!views.renames("monitor"));
        let clock2 = views.get("ui://clock2/get-time/app.html").expect("served");
        assert_eq!(
            (&*clock2.backend, clock2.own.as_str()),
            ("clock2", "ui://get-time/app.html")
        );
        assert_eq!(
            views
                .get("ui://monitor/app.html")
                .map(|view| &*view.backend),
            Some("monitor")
        );
        assert!(
            views.get("ui://get-time/app.html").is_none(),
            "ambiguous, so gone"
        );
    }

    #[test]
    fn renaming_touches_only_the_uri_and_keeps_the_rest_byte_for_byte() {
        let tool = r#"{"name":"get-time","_meta":{"ui":{"resourceUri":"ui://a/b","csp":1.50},"ui/resourceUri":"ui://a/b"},"x":1e400}"#;
        let renamed = tool_with_view(tool, "ui://s/a/b").expect("renamed");
        assert_eq!(
            renamed,
            r#"{"name":"get-time","_meta":{"ui":{"resourceUri":"ui://s/a/b","csp":1.50},"ui/resourceUri":"ui://s/a/b"},"x":1e400}"#
        );
        let result = r#"{"contents":[{"uri":"ui://a/b","mimeType":"text/html;profile=mcp-app","text":"<html>"},{"uri":"ui://a/c","n":2.0}]}"#;
        assert_eq!(
            read_result(result, "ui://a/b", "ui://s/a/b"),
            r#"{"contents":[{"uri":"ui://s/a/b","mimeType":"text/html;profile=mcp-app","text":"<html>"},{"uri":"ui://a/c","n":2.0}]}"#
        );
        assert_eq!(read_result("not JSON", "a", "b"), "not JSON");
    }
}
