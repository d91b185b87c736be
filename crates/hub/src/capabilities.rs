//! What an editor said it can be asked (and its name), what each request of a backend needs of
//! it, and what a backend's server declared it offers.
//!
//! Every backend is told Switchboard can be asked everything it can pass on to an editor
//! (sampling with context and tools, form and URL elicitation, roots), so that a server offers
//! the tools that need those. A request the editor of the call did not declare it can answer is
//! refused with an error that says what is missing, rather than shown to it.
//!
//! It also says whether the editor renders MCP Apps' views; backends are told that Switchboard
//! passes views on, and the tools only a view may call are listed only to editors that render
//! them.

use std::sync::Arc;

use serde_json::value::RawValue;

use super::rewrite::ObjectEntries;
use supervisor::BackendHandle;
use supervisor::status::BackendState;
use wire::apps::{self, UI_EXTENSION};
use wire::era::TASKS_EXTENSION;
use wire::method::Method;

/// What the client declared in `initialize`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct ClientCapabilities {
    pub(super) sampling: bool,
    /// `sampling.context`: `includeContext` other than `none`.
    pub(super) sampling_context: bool,
    /// `sampling.tools`: `tools` and `toolChoice` in a sampling request.
    pub(super) sampling_tools: bool,
    /// `elicitation.form`, or an empty `elicitation` (as clients before 2025-11-25 declare it).
    pub(super) elicitation_form: bool,
    pub(super) elicitation_url: bool,
    pub(super) roots: bool,
    /// `extensions["io.modelcontextprotocol/tasks"]` (2026-07-28): a `tools/call` may be
    /// answered with a task handle.
    pub(super) tasks_extension: bool,
    /// `extensions["io.modelcontextprotocol/ui"]` with the app mime type: the editor renders
    /// MCP Apps' views (and hides the tools only a view may call from its model itself).
    pub(super) apps: bool,
}

impl ClientCapabilities {
    /// Reads the `capabilities` object of `initialize`; anything unreadable declares nothing.
    pub(super) fn parse(capabilities: &RawValue) -> ClientCapabilities {
        let Ok(entries) = ObjectEntries::parse(capabilities.get()) else {
            return ClientCapabilities::default();
        };
        let object = |key: &str| {
            entries
                .get(key)
                .and_then(|raw| ObjectEntries::parse(raw.get()).ok())
        };
        let sampling = object("sampling");
        let elicitation = object("elicitation");
        let has = |object: &Option<ObjectEntries<'_>>, key: &str| {
            object
                .as_ref()
                .is_some_and(|object| object.get(key).is_some())
        };
        let elicitation_url = has(&elicitation, "url");
        let extensions = object("extensions");
        let extension = |name: &str| {
            extensions
                .as_ref()
                .and_then(|extensions| extensions.get(name))
        };
        ClientCapabilities {
            sampling: sampling.is_some(),
            sampling_context: has(&sampling, "context"),
            sampling_tools: has(&sampling, "tools"),
            elicitation_form: has(&elicitation, "form")
                || (elicitation.is_some() && !elicitation_url),
            elicitation_url,
            roots: object("roots").is_some(),
            tasks_extension: extension(TASKS_EXTENSION).is_some(),
            apps: extension(UI_EXTENSION).is_some_and(apps::renders_views),
        }
    }

    /// The declared capabilities as a `capabilities` object, for a 2026-07-28 backend asked on
    /// this client's behalf.
    pub(super) fn to_json(self) -> serde_json::Value {
        let mut capabilities = serde_json::Map::new();
        if self.sampling {
            let mut sampling = serde_json::Map::new();
            if self.sampling_context {
                sampling.insert("context".into(), serde_json::json!({}));
            }
            if self.sampling_tools {
                sampling.insert("tools".into(), serde_json::json!({}));
            }
            capabilities.insert("sampling".into(), sampling.into());
        }
        if self.elicitation_form || self.elicitation_url {
            let mut elicitation = serde_json::Map::new();
            if self.elicitation_form {
                elicitation.insert("form".into(), serde_json::json!({}));
            }
            if self.elicitation_url {
                elicitation.insert("url".into(), serde_json::json!({}));
            }
            capabilities.insert("elicitation".into(), elicitation.into());
        }
        if self.roots {
            capabilities.insert("roots".into(), serde_json::json!({}));
        }
        let mut extensions = serde_json::Map::new();
        if self.tasks_extension {
            extensions.insert(TASKS_EXTENSION.into(), serde_json::json!({}));
        }
        if self.apps {
            extensions.insert(UI_EXTENSION.into(), apps::declared());
        }
        if !extensions.is_empty() {
            capabilities.insert("extensions".into(), extensions.into());
        }
        capabilities.into()
    }

    /// Whether the client can be asked anything at all.
    pub(super) fn any(&self) -> bool {
        self.sampling || self.elicitation_form || self.elicitation_url || self.roots
    }

    /// What a backend's `method` request with `params` needs that the client did not declare,
    /// in words; `None` when it can answer.
    pub(super) fn lacks(&self, method: &Method, params: Option<&RawValue>) -> Option<&'static str> {
        let params = params.and_then(|params| ObjectEntries::parse(params.get()).ok());
        let field = |key: &str| params.as_ref().and_then(|params| params.get_str(key));
        let present = |key: &str| {
            params
                .as_ref()
                .is_some_and(|params| params.get(key).is_some())
        };
        match method {
            Method::SamplingCreateMessage => {
                if !self.sampling {
                    Some("sampling")
                } else if (present("tools") || present("toolChoice")) && !self.sampling_tools {
                    Some("sampling with tools")
                } else if field("includeContext").is_some_and(|context| context != "none")
                    && !self.sampling_context
                {
                    Some("sampling with context")
                } else {
                    None
                }
            }
            Method::ElicitationCreate => match field("mode").as_deref() {
                Some("url") if !self.elicitation_url => Some("URL-mode elicitation"),
                Some("url") => None,
                _ if !self.elicitation_form => Some("form elicitation"),
                _ => None,
            },
            Method::RootsList if !self.roots => Some("roots"),
            _ => None,
        }
    }
}

/// The `name` of a `clientInfo` object (of `initialize`, or of a 2026-07-28 request's `_meta`).
pub(super) fn client_name(info: Option<&RawValue>) -> Option<Arc<str>> {
    let info = ObjectEntries::parse(info?.get()).ok()?;
    Some(Arc::from(&*info.get_str("name")?))
}

/// Whether `backend` is ready and its server declared the capability at `path` (say,
/// `["tasks", "list"]`).
pub(super) fn ready_with(backend: &BackendHandle, path: &[&str]) -> bool {
    let status = backend.status();
    let Some(server) = status
        .server
        .as_ref()
        .filter(|_| status.state == BackendState::Ready)
    else {
        return false;
    };
    let mut object = server.capabilities.get().to_owned();
    for key in path {
        let Some(inner) = ObjectEntries::parse(&object)
            .ok()
            .and_then(|entries| entries.get(key).map(|inner| inner.get().to_owned()))
        else {
            return false;
        };
        object = inner;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(json: &str) -> ClientCapabilities {
        ClientCapabilities::parse(&RawValue::from_string(json.to_owned()).expect("JSON"))
    }

    fn params(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).expect("JSON")
    }

    #[test]
    fn an_empty_elicitation_means_form_only() {
        let old = declared(r#"{"elicitation":{}}"#);
        assert!(old.elicitation_form && !old.elicitation_url);
        let url_only = declared(r#"{"elicitation":{"url":{}}}"#);
        assert!(!url_only.elicitation_form && url_only.elicitation_url);
        let both = declared(r#"{"elicitation":{"form":{},"url":{}}}"#);
        assert!(both.elicitation_form && both.elicitation_url);
        assert_eq!(declared("[]"), ClientCapabilities::default());
        assert!(!declared("{}").any());
    }

    #[test]
    fn an_editor_that_renders_views_is_told_apart_and_passed_on() {
        let host = declared(
            r#"{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]},"io.modelcontextprotocol/tasks":{}}}"#,
        );
        assert!(host.apps && host.tasks_extension);
        let passed_on = ClientCapabilities::parse(
            &RawValue::from_string(host.to_json().to_string()).expect("JSON"),
        );
        assert_eq!(passed_on, host);
        assert!(!declared(r#"{"extensions":{"io.modelcontextprotocol/ui":{}}}"#).apps);
        assert!(declared("{}").to_json().get("extensions").is_none());
    }

    #[test]
    fn each_request_names_what_the_client_lacks() {
        let form = declared(r#"{"elicitation":{}}"#);
        let url = params(r#"{"mode":"url","url":"https://example.com","message":"m"}"#);
        assert_eq!(
            form.lacks(&Method::ElicitationCreate, Some(&url)),
            Some("URL-mode elicitation")
        );
        assert_eq!(
            form.lacks(
                &Method::ElicitationCreate,
                Some(&params(r#"{"message":"m"}"#))
            ),
            None
        );
        let both = declared(r#"{"elicitation":{"form":{},"url":{}}}"#);
        assert_eq!(both.lacks(&Method::ElicitationCreate, Some(&url)), None);

        let plain = declared(r#"{"sampling":{}}"#);
        let with_tools = params(r#"{"messages":[],"maxTokens":9,"tools":[]}"#);
        assert_eq!(
            plain.lacks(&Method::SamplingCreateMessage, Some(&with_tools)),
            Some("sampling with tools")
        );
        let with_context = params(r#"{"messages":[],"maxTokens":9,"includeContext":"thisServer"}"#);
        assert_eq!(
            plain.lacks(&Method::SamplingCreateMessage, Some(&with_context)),
            Some("sampling with context")
        );
        let full = declared(r#"{"sampling":{"tools":{},"context":{}}}"#);
        assert_eq!(
            full.lacks(&Method::SamplingCreateMessage, Some(&with_tools)),
            None
        );
        assert_eq!(
            full.lacks(&Method::SamplingCreateMessage, Some(&with_context)),
            None
        );
        assert_eq!(
            declared("{}").lacks(&Method::RootsList, None),
            Some("roots")
        );
        assert_eq!(
            declared("{}").lacks(&Method::SamplingCreateMessage, None),
            Some("sampling")
        );
        assert_eq!(declared("{}").lacks(&Method::Ping, None), None);
    }
}
