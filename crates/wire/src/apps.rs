//! MCP Apps (SEP-1865, the extension `io.modelcontextprotocol/ui`): a tool names an interactive
//! view in `_meta.ui.resourceUri`, a `ui://` resource of [`APP_MIME_TYPE`] that the host renders
//! in a sandboxed frame, and `_meta.ui.visibility` says who may call the tool: the model, the
//! view, or both (the default).

use serde::Deserialize;
use serde_json::value::RawValue;

/// The extension's name in `capabilities.extensions`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The mime type of a view, which a host that renders views lists in the extension's
/// `mimeTypes`.
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The scheme of a view's URI.
pub const VIEW_SCHEME: &str = "ui://";

/// The key of `_meta` that named a tool's view before `_meta.ui.resourceUri`, which servers
/// still send alongside it.
pub const LEGACY_VIEW_KEY: &str = "ui/resourceUri";

/// The extension as a client declares it: it renders views.
pub fn declared() -> serde_json::Value {
    serde_json::json!({ "mimeTypes": [APP_MIME_TYPE] })
}

/// Whether `mime_type` is a view's: `text/html` with the parameter `profile=mcp-app` (in any
/// case, quoted or not, among other parameters).
pub fn is_view_type(mime_type: &str) -> bool {
    let mut parts = mime_type.split(';').map(str::trim);
    parts
        .next()
        .is_some_and(|media| media.eq_ignore_ascii_case("text/html"))
        && parts.any(|parameter| {
            parameter.split_once('=').is_some_and(|(name, value)| {
                name.trim().eq_ignore_ascii_case("profile")
                    && value
                        .trim()
                        .trim_matches('"')
                        .eq_ignore_ascii_case("mcp-app")
            })
        })
}

/// Whether an `extensions[UI_EXTENSION]` a client declared says it renders views.
pub fn renders_views(extension: &RawValue) -> bool {
    #[derive(Deserialize)]
    struct Extension {
        #[serde(rename = "mimeTypes", default)]
        mime_types: Vec<serde_json::Value>,
    }
    serde_json::from_str::<Extension>(extension.get()).is_ok_and(|extension| {
        extension
            .mime_types
            .iter()
            .any(|mime| mime == APP_MIME_TYPE)
    })
}

/// Whether `tool` is its view's alone: `_meta.ui.visibility` lists who may call it, and the
/// model is not among them. A visibility that cannot be read leaves the tool to the model.
pub fn app_only(tool: &RawValue) -> bool {
    if !tool.get().contains("visibility") {
        return false;
    }
    ui_meta(tool)
        .and_then(|meta| meta.ui?.visibility)
        .is_some_and(|visibility| !visibility.iter().any(|who| who == "model"))
}

/// The URI of the view `tool` names: `_meta.ui.resourceUri`, else the older
/// `_meta["ui/resourceUri"]`; only a `ui://` URI.
pub fn view_uri(tool: &RawValue) -> Option<String> {
    if !tool.get().contains(VIEW_SCHEME) {
        return None;
    }
    let meta = ui_meta(tool)?;
    meta.ui
        .and_then(|ui| ui.resource_uri)
        .or(meta.legacy)
        .filter(|uri| uri.starts_with(VIEW_SCHEME))
}

/// What a tool's `_meta` says of MCP Apps, as far as it can be read.
fn ui_meta(tool: &RawValue) -> Option<Meta> {
    #[derive(Deserialize)]
    struct Tool {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
    }
    serde_json::from_str::<Tool>(tool.get()).ok()?.meta
}

#[derive(Deserialize)]
struct Meta {
    ui: Option<Ui>,
    #[serde(rename = "ui/resourceUri")]
    legacy: Option<String>,
}

#[derive(Deserialize)]
struct Ui {
    #[serde(rename = "resourceUri")]
    resource_uri: Option<String>,
    visibility: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).expect("JSON")
    }

    #[test]
    fn a_tool_is_the_view_s_alone_only_when_its_visibility_leaves_out_the_model() {
        let app_only_tool =
            r#"{"name":"poll","_meta":{"ui":{"resourceUri":"ui://a/b","visibility":["app"]}}}"#;
        assert!(app_only(&raw(app_only_tool)));
        assert!(app_only(&raw(
            r#"{"name":"x","_meta":{"ui":{"visibility":[]}}}"#
        )));
        for for_the_model in [
            r#"{"name":"get","_meta":{"ui":{"resourceUri":"ui://a/b"}}}"#,
            r#"{"name":"get","_meta":{"ui":{"visibility":["model","app"]}}}"#,
            r#"{"name":"get","_meta":{"ui":{"visibility":"app"}}}"#,
            r#"{"name":"get","description":"visibility","_meta":{"ui":null}}"#,
            r#"{"name":"get","_meta":{"visibility":["app"]}}"#,
        ] {
            assert!(!app_only(&raw(for_the_model)), "{for_the_model}");
        }
    }

    #[test]
    fn a_tool_names_its_view_in_meta_ui_or_the_older_key() {
        let both =
            r#"{"name":"t","_meta":{"ui":{"resourceUri":"ui://a/b"},"ui/resourceUri":"ui://a/b"}}"#;
        assert_eq!(view_uri(&raw(both)).as_deref(), Some("ui://a/b"));
        let legacy = r#"{"name":"t","_meta":{"ui/resourceUri":"ui://old/x"}}"#;
        assert_eq!(view_uri(&raw(legacy)).as_deref(), Some("ui://old/x"));
        for none in [
            r#"{"name":"t","description":"see ui://a/b"}"#,
            r#"{"name":"t","_meta":{"ui":{"resourceUri":"https://a/b"}},"d":"ui://"}"#,
            r#"{"name":"t","_meta":{"ui":{"resourceUri":7}},"d":"ui://"}"#,
        ] {
            assert_eq!(view_uri(&raw(none)), None, "{none}");
        }
    }

    #[test]
    fn a_view_is_html_of_the_app_profile() {
        for view in [
            APP_MIME_TYPE,
            "text/html; profile=mcp-app",
            "TEXT/HTML;charset=utf-8;profile=\"mcp-app\"",
        ] {
            assert!(is_view_type(view), "{view}");
        }
        for other in [
            "text/html",
            "text/plain;profile=mcp-app",
            "text/html;profile=other",
            "",
        ] {
            assert!(!is_view_type(other), "{other}");
        }
    }

    #[test]
    fn a_client_renders_views_when_it_lists_the_app_mime_type() {
        assert!(renders_views(&raw(&declared().to_string())));
        assert!(!renders_views(&raw(r#"{}"#)));
        assert!(!renders_views(&raw(r#"{"mimeTypes":["text/html"]}"#)));
        assert!(!renders_views(&raw(
            r#"{"mimeTypes":"text/html;profile=mcp-app"}"#
        )));
    }
}
