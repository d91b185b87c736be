//! One entry of an editor's file, read into what it becomes in our config: a local server (its
//! command line, environment and folder) or a remote one (its URL and headers, signed in with
//! OAuth when the server asks), in our config's syntax; or the reason it cannot be.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::SkipReason;
use super::run::Run;
use crate::Editor;
use config::SandboxDraft;

/// One server of the editor's file, in our config's terms.
#[derive(Debug, Clone)]
pub(super) struct Server {
    /// Values in our config's syntax (`${env:NAME}` references, `$${` for a literal `${`).
    pub(super) run: Run,
    pub(super) sandbox: Option<SandboxDraft>,
    pub(super) notes: Vec<String>,
}

impl Server {
    /// Its entry in our config, without its sandbox: `command`, `args`, `env` and `cwd`, or
    /// `url`, `headers` and `transport`, each only when it says something.
    pub(super) fn our_entry(&self) -> Value {
        let mut entry = Map::new();
        let mut put = |key: &str, value: Value| {
            entry.insert(key.to_owned(), value);
        };
        match &self.run {
            Run::Local {
                command,
                args,
                env,
                cwd,
            } => {
                put("command", json!(command));
                if !args.is_empty() {
                    put("args", json!(args));
                }
                if !env.is_empty() {
                    put("env", json!(env));
                }
                if let Some(cwd) = cwd {
                    put("cwd", json!(cwd));
                }
            }
            Run::Remote {
                url,
                headers,
                transport,
            } => {
                put("url", json!(url));
                if !headers.is_empty() {
                    put("headers", json!(headers));
                }
                if let Some(transport) = transport {
                    put("transport", json!(transport));
                }
            }
        }
        Value::Object(entry)
    }
}

/// The fields of an editor's local entry that are imported.
const LOCAL_FIELDS: &[&str] = &["type", "command", "args", "env", "cwd"];

/// The fields of an editor's remote entry that are imported (`serverUrl` is Windsurf's URL,
/// `httpUrl` Gemini CLI's for Streamable HTTP; `http_headers`, `env_http_headers` and
/// `bearer_token_env_var` are Codex CLI's headers).
const REMOTE_FIELDS: &[&str] = &[
    "type",
    "url",
    "serverUrl",
    "httpUrl",
    "headers",
    "http_headers",
    "env_http_headers",
    "bearer_token_env_var",
];

/// The transports Switchboard speaks, as a sentence's end.
const SPOKEN: &str = "Switchboard speaks stdio, Streamable HTTP and HTTP+SSE";

/// Turns the entries of one editor's file into servers.
pub(super) struct EntryReader<'a> {
    pub(super) editor: Editor,
    pub(super) exe: &'a Path,
    /// The port of our own endpoint, to recognise entries that point at it.
    pub(super) port: u16,
    /// Whether each local server gets a first sandbox.
    pub(super) sandbox: bool,
}

impl EntryReader<'_> {
    pub(super) fn read(&self, entry: &Value) -> Result<Server, SkipReason> {
        let Value::Object(fields) = entry else {
            return unsupported("its entry is not an object");
        };
        let kind = match fields.get("type") {
            None => None,
            Some(Value::String(kind)) => Some(kind.as_str()),
            Some(_) => return unsupported("its `type` is not a string"),
        };
        let url = ["url", "serverUrl", "httpUrl"]
            .iter()
            .find_map(|key| Some((*key, fields.get(*key)?)));
        let transport = match kind {
            None | Some("stdio") => None,
            Some("http" | "streamable-http" | "streamableHttp") => Some("streamable-http"),
            Some("sse") => Some("sse"),
            Some(kind) => {
                return unsupported(&format!(
                    "its type {kind:?} is a transport Switchboard does not speak ({SPOKEN})"
                ));
            }
        };
        match url {
            Some((key, url)) => self.remote(fields, key, url, transport),
            None if transport.is_some() => unsupported(&format!(
                "its type is {:?} but it has no `url`",
                kind.unwrap_or_default()
            )),
            None => self.local(fields),
        }
    }

    fn remote(
        &self,
        fields: &Map<String, Value>,
        key: &str,
        url: &Value,
        transport: Option<&'static str>,
    ) -> Result<Server, SkipReason> {
        let Value::String(url) = url else {
            return unsupported(&format!("its `{key}` is not a string"));
        };
        if self.is_own_url(url) {
            return Err(SkipReason::PointsAtSwitchboard);
        }
        let scheme = url.split_once("://").map(|(scheme, _)| scheme);
        if !scheme.is_some_and(|scheme| {
            scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
        }) {
            return unsupported(&format!(
                "its URL {} is not http:// or https://, so it is not a transport Switchboard \
                 speaks ({SPOKEN})",
                config::shown_url(url)
            ));
        }
        // Gemini CLI reads `url` as an HTTP+SSE server's and `httpUrl` as a Streamable HTTP one's.
        let transport = match (self.editor, key) {
            (Editor::Gemini, "httpUrl") => Some("streamable-http"),
            (Editor::Gemini, "url") => Some("sse"),
            _ => transport,
        };
        let url = self.value("URL", url)?;
        let mut headers = BTreeMap::new();
        for key in ["headers", "http_headers"] {
            for (name, value) in self.strings(fields, key)? {
                let value = self.value(&format!("header {name}"), &value)?;
                headers.insert(name, value);
            }
        }
        // Codex CLI names the variables that hold some headers' values.
        for (name, variable) in self.strings(fields, "env_http_headers")? {
            headers.insert(name, format!("${{env:{variable}}}"));
        }
        if let Some(variable) = fields.get("bearer_token_env_var") {
            let Value::String(variable) = variable else {
                return unsupported("its `bearer_token_env_var` is not a string");
            };
            headers.insert(
                "Authorization".to_owned(),
                format!("Bearer ${{env:{variable}}}"),
            );
        }
        Ok(Server {
            run: Run::Remote {
                url,
                headers,
                transport,
            },
            sandbox: None,
            notes: left_out(fields, REMOTE_FIELDS),
        })
    }

    fn local(&self, fields: &Map<String, Value>) -> Result<Server, SkipReason> {
        let command = match fields.get("command") {
            Some(Value::String(command)) if !command.is_empty() => command.clone(),
            Some(_) => return unsupported("its `command` is not a program name"),
            None => return unsupported("it has no `command` or `url`"),
        };
        let args = match fields.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let strings: Option<Vec<String>> = items
                    .iter()
                    .map(|item| item.as_str().map(str::to_owned))
                    .collect();
                match strings {
                    Some(strings) => strings,
                    None => return unsupported("its `args` are not all strings"),
                }
            }
            Some(_) => return unsupported("its `args` are not a list"),
        };
        if self.runs_switchboard(&command, &args) {
            return Err(SkipReason::PointsAtSwitchboard);
        }
        if let Some(env_file) = fields.get("envFile") {
            return unsupported(&format!(
                "it loads variables from envFile {env_file}, which Switchboard cannot; add it by \
                 hand with those variables in `env`"
            ));
        }
        let cwd = match fields.get("cwd") {
            None | Some(Value::Null) => None,
            Some(Value::String(cwd)) => Some(cwd.clone()),
            Some(_) => return unsupported("its `cwd` is not a string"),
        };
        let mut env = BTreeMap::new();
        for (name, value) in self.strings(fields, "env")? {
            let value = self.value(&format!("env {name}"), &value)?;
            env.insert(name, value);
        }
        if self.editor.expands_references() {
            let places = std::iter::once(("command", &command))
                .chain(args.iter().map(|arg| ("args", arg)))
                .chain(cwd.iter().map(|cwd| ("cwd", cwd)));
            for (place, text) in places {
                // Our config expands `${env:…}` in arguments as the editor does, not elsewhere.
                if let Some(reference) = reference(text, place == "args") {
                    return Err(self.unexpressible(place, reference));
                }
            }
        }
        let mut notes = left_out(fields, LOCAL_FIELDS);
        let sandbox = self
            .sandbox
            .then(|| SandboxDraft::for_command(&command, &args));
        notes.extend(sandbox.as_ref().map(SandboxDraft::describe));
        // Our config reads `${env:…}` and `${secret:…}` in arguments; this editor passes them on
        // as written, so they are written as literal text.
        let args = match self.editor.expands_references() {
            true => args,
            false => args.iter().map(|arg| arg.replace("${", "$${")).collect(),
        };
        Ok(Server {
            run: Run::Local {
                command,
                args,
                env,
                cwd,
            },
            sandbox,
            notes,
        })
    }

    /// The object under `key` (`env`, `headers`…) as names and texts: numbers and booleans
    /// written as text, anything else refused.
    fn strings(
        &self,
        fields: &Map<String, Value>,
        key: &str,
    ) -> Result<Vec<(String, String)>, SkipReason> {
        let variables = match fields.get(key) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Object(variables)) => variables,
            Some(_) => return unsupported(&format!("its `{key}` is not an object")),
        };
        let mut strings = Vec::with_capacity(variables.len());
        for (name, value) in variables {
            let value = match value {
                Value::String(text) => text.clone(),
                Value::Number(number) => number.to_string(),
                Value::Bool(flag) => flag.to_string(),
                _ => return unsupported(&format!("its {key} {name} is not a string")),
            };
            strings.push((name.clone(), value));
        }
        Ok(strings)
    }

    /// `value` in our config's syntax, where `${env:NAME}` is expanded and `$${` is a literal
    /// `${`.
    fn value(&self, place: &str, value: &str) -> Result<String, SkipReason> {
        if !self.editor.expands_references() {
            return Ok(value.replace("${", "$${"));
        }
        match reference(value, true) {
            Some(reference) => Err(self.unexpressible(place, reference)),
            None => Ok(value.to_owned()),
        }
    }

    fn unexpressible(&self, place: &str, reference: &str) -> SkipReason {
        SkipReason::Unsupported(format!(
            "`{reference}` in its {place} is filled in by {}, which Switchboard cannot do; add \
             this server by hand with the value written out",
            self.editor.title()
        ))
    }

    /// Whether `command args` runs `switchboard connect` (the command written as a path of any
    /// platform, since editors' files travel between machines).
    pub(super) fn runs_switchboard(&self, command: &str, args: &[String]) -> bool {
        let file_name = command.rsplit(['/', '\\']).next().unwrap_or(command);
        let file_name = file_name.to_ascii_lowercase();
        let stem = file_name.strip_suffix(".exe").unwrap_or(&file_name);
        let own_stem = self
            .exe
            .file_stem()
            .map(|stem| stem.to_string_lossy().to_ascii_lowercase());
        let is_switchboard = Path::new(command) == self.exe
            || stem == "switchboard"
            || own_stem.as_deref() == Some(stem);
        is_switchboard && args.first().is_some_and(|arg| arg == "connect")
    }

    /// Whether `url` is Switchboard's own endpoint on this machine: a loopback address at our
    /// port (`/mcp`, a profile's `/mcp/NAME`, `/sse`: any path there is ours).
    pub(super) fn is_own_url(&self, url: &str) -> bool {
        let Some(rest) = url
            .get(.."http://".len())
            .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
            .map(|_| &url["http://".len()..])
        else {
            return false;
        };
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        let Some((host, port)) = authority.rsplit_once(':') else {
            return false;
        };
        let loopback = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .any(|name| host.eq_ignore_ascii_case(name));
        loopback && port.parse::<u16>().ok() == Some(self.port)
    }
}

fn unsupported<T>(why: &str) -> Result<T, SkipReason> {
    Err(SkipReason::Unsupported(why.to_owned()))
}

/// A note naming the entry's fields our config has no place for, if there are any.
fn left_out(fields: &Map<String, Value>, imported: &[&str]) -> Vec<String> {
    let mut left_out: Vec<String> = fields
        .keys()
        .filter(|key| !imported.contains(&key.as_str()))
        .map(|key| format!("`{key}`"))
        .collect();
    left_out.sort();
    match left_out.is_empty() {
        true => Vec::new(),
        false => vec![format!("left out {}", left_out.join(", "))],
    }
}

/// The first `${…}` reference in `text` (an unterminated `${` runs to the end), leaving out
/// `${env:NAME}` when `env_allowed`.
pub(super) fn reference(text: &str, env_allowed: bool) -> Option<&str> {
    let mut from = 0;
    while let Some(start) = text[from..].find("${").map(|start| from + start) {
        let Some(length) = text[start..].find('}') else {
            return Some(&text[start..]);
        };
        let end = start + length + 1;
        let inner = &text[start + 2..end - 1];
        let is_env = inner
            .strip_prefix("env:")
            .is_some_and(|name| !name.is_empty());
        if !(env_allowed && is_env) {
            return Some(&text[start..end]);
        }
        from = end;
    }
    None
}
