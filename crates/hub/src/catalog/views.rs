//! MCP Apps' views in a profile (`wire::apps`): every `ui://` URI its tools name in
//! `_meta.ui.resourceUri` or its servers list as resources, and the server that serves it, so a
//! read of a view goes to its server even when it is not listed. Two servers naming the same URI
//! (two instances of one app server, say) would leave it ambiguous, so each of them offers it as
//! `ui://SERVER/…` instead: in its tools' `_meta.ui`, in its resource list, and in what a read of
//! it answers; a read of the renamed URI goes to that server with the server's own URI. What a
//! read of a view a tool names answers must be an app's HTML: anything else is refused, so that
//! an editor never renders what a server did not make a view.

use std::collections::HashMap;
use std::sync::Arc;

use super::MergedCatalog;
use crate::rewrite::{ObjectEntries, json_string};
use wire::apps::{self, LEGACY_VIEW_KEY, VIEW_SCHEME};

/// Where a view editors know by one URI is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub(crate) backend: Arc<str>,
    /// The server's own URI for it.
    pub(crate) own: String,
    /// Whether a tool names it as its view (else a server only lists it).
    pub(crate) of_tool: bool,
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
    /// The views from what each backend names (`backend`, its own URI, whether a tool names
    /// it), in config order.
    pub(crate) fn new(claims: impl IntoIterator<Item = (Arc<str>, String, bool)>) -> Views {
        let mut claimants: HashMap<String, Vec<(Arc<str>, bool)>> = HashMap::new();
        for (backend, uri, of_tool) in claims {
            let backends = claimants.entry(uri).or_default();
            match backends.iter_mut().find(|(known, _)| *known == backend) {
                Some((_, known_of_tool)) => *known_of_tool |= of_tool,
                None => backends.push((backend, of_tool)),
            }
        }
        let mut views = Views::default();
        for (own, backends) in claimants {
            if let [(backend, of_tool)] = backends.as_slice() {
                let view = View {
                    backend: backend.clone(),
                    own: own.clone(),
                    of_tool: *of_tool,
                };
                views.served.insert(own, view);
                continue;
            }
            for (backend, of_tool) in backends {
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
                let view = View {
                    backend,
                    own,
                    of_tool,
                };
                views.served.insert(exposed, view);
            }
        }
        views
    }

    /// The view editors know as `uri`.
    pub(crate) fn get(&self, uri: &str) -> Option<&View> {
        self.served.get(uri)
    }

    /// The URI editors see for `backend`'s own `uri`, when it is renamed.
    pub(crate) fn renamed(&self, backend: &str, uri: &str) -> Option<&str> {
        self.renamed.get(backend)?.get(uri).map(String::as_str)
    }

    /// Whether `backend` serves a view.
    pub(crate) fn serves(&self, backend: &str) -> bool {
        self.served.values().any(|view| &*view.backend == backend)
    }

    /// Whether any view of `backend` is renamed.
    pub(crate) fn renames(&self, backend: &str) -> bool {
        self.renamed.contains_key(backend)
    }
}

/// For a request about a view of MCP Apps: that view, and the URI the editor knows it by; the
/// URI in `entries` is made the server's own where it differs.
pub(crate) fn of_request(
    catalog: &MergedCatalog,
    entries: &mut ObjectEntries<'_>,
) -> Option<(View, String)> {
    let uri = entries.get_str("uri")?;
    let view = catalog.views.get(&uri)?;
    if view.own != *uri {
        entries.set("uri", json_string(&view.own));
    }
    Some((view.clone(), uri.into_owned()))
}

/// A view of MCP Apps calls its server's tools by the server's own names: a name no tool is
/// exposed by that one tool of a server serving views has as its own is made its exposed name.
pub(crate) fn call_by_own_name(catalog: &MergedCatalog, entries: &mut ObjectEntries<'_>) {
    if catalog.view_calls.is_empty() {
        return;
    }
    let Some(name) = entries.get_str("name") else {
        return;
    };
    if catalog.tools.contains_key(&*name) || catalog.unlisted_tools.contains_key(&*name) {
        return;
    }
    if let Some(Some(exposed)) = catalog.view_calls.get(&*name) {
        entries.set("name", json_string(exposed));
    }
}

/// `tool` (JSON) naming its view as `uri`, in `_meta.ui.resourceUri` and in the older
/// `_meta["ui/resourceUri"]` where it has that too.
pub(crate) fn tool_with_view(tool: &str, uri: &str) -> Option<String> {
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
pub(crate) fn with_uri(item: &str, uri: &str) -> Option<String> {
    let mut entries = ObjectEntries::parse(item).ok()?;
    entries.set("uri", json_string(uri));
    Some(entries.to_json())
}

/// What a read of `view` (known to the editor as `exposed`) answers: the result with the
/// contents at the server's own URI said to be at `exposed`, anything else as it came; or, for a
/// view a tool names whose contents are not an app's HTML, what they are instead.
pub(crate) fn read_result(result: &str, view: &View, exposed: &str) -> Result<String, NotAView> {
    if view.of_tool {
        not_a_view(result)?;
    }
    if view.own == exposed {
        return Ok(result.to_owned());
    }
    Ok(renamed(result, &view.own, exposed))
}

/// What the contents of a read of a view a tool names are, when they are not an app's view.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotAView {
    #[error("not a read's result")]
    NotARead,
    #[error("empty")]
    Empty,
    /// The mime types of the contents that are not a view's, in their order ("without a mime
    /// type" for one that has none).
    #[error("{}", .0.join(", "))]
    Types(Vec<String>),
}

/// The mime types of a read's contents when any is not an app's view's.
fn not_a_view(result: &str) -> Result<(), NotAView> {
    #[derive(serde::Deserialize)]
    struct Read {
        contents: Vec<Content>,
    }
    #[derive(serde::Deserialize)]
    struct Content {
        #[serde(rename = "mimeType")]
        mime_type: Option<String>,
    }
    let Ok(read) = serde_json::from_str::<Read>(result) else {
        return Err(NotAView::NotARead);
    };
    let wrong: Vec<String> = read
        .contents
        .iter()
        .filter(|content| !content.mime_type.as_deref().is_some_and(apps::is_view_type))
        .map(|content| {
            content
                .mime_type
                .clone()
                .unwrap_or_else(|| "without a mime type".to_owned())
        })
        .collect();
    match (read.contents.is_empty(), wrong.is_empty()) {
        (true, _) => Err(NotAView::Empty),
        (false, true) => Ok(()),
        (false, false) => Err(NotAView::Types(wrong)),
    }
}

/// `result` with the contents at `own` said to be at `exposed`; anything else as it came.
pub(super) fn renamed(result: &str, own: &str, exposed: &str) -> String {
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
            ("clock", "ui://get-time/app.html", true),
            ("clock", "ui://get-time/app.html", false),
            ("clock2", "ui://get-time/app.html", false),
            ("monitor", "ui://monitor/app.html", true),
        ];
        let views = Views::new(
            claims
                .into_iter()
                .map(|(backend, uri, of_tool)| (Arc::from(backend), uri.to_owned(), of_tool)),
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
            (&*clock2.backend, clock2.own.as_str(), clock2.of_tool),
            ("clock2", "ui://get-time/app.html", false)
        );
        let clock = views.get("ui://clock/get-time/app.html").expect("served");
        assert!(clock.of_tool, "listed and named by a tool");
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
        let view = View {
            backend: Arc::from("s"),
            own: "ui://a/b".to_owned(),
            of_tool: false,
        };
        let result = r#"{"contents":[{"uri":"ui://a/b","mimeType":"text/html;profile=mcp-app","text":"<html>"},{"uri":"ui://a/c","n":2.0}]}"#;
        assert_eq!(
            read_result(result, &view, "ui://s/a/b").as_deref(),
            Ok(
                r#"{"contents":[{"uri":"ui://s/a/b","mimeType":"text/html;profile=mcp-app","text":"<html>"},{"uri":"ui://a/c","n":2.0}]}"#
            )
        );
        assert_eq!(
            read_result("not JSON", &view, "b").as_deref(),
            Ok("not JSON")
        );
    }

    #[test]
    fn a_view_a_tool_names_must_be_an_app_s_html() {
        let view = View {
            backend: Arc::from("s"),
            own: "ui://a/b".to_owned(),
            of_tool: true,
        };
        let html = r#"{"contents":[{"uri":"ui://a/b","mimeType":"text/html;profile=mcp-app","text":"<html>"}]}"#;
        assert_eq!(read_result(html, &view, "ui://a/b").as_deref(), Ok(html));
        let plain = r#"{"contents":[{"uri":"ui://a/b","mimeType":"text/plain","text":"hi"},{"uri":"ui://a/b","text":"x"}]}"#;
        assert_eq!(
            read_result(plain, &view, "ui://a/b").map_err(|why| why.to_string()),
            Err("text/plain, without a mime type".to_owned())
        );
        assert_eq!(
            read_result(r#"{"contents":[]}"#, &view, "ui://a/b").map_err(|why| why.to_string()),
            Err("empty".to_owned())
        );
        assert!(read_result("[]", &view, "ui://a/b").is_err());
    }
}
