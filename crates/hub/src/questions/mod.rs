//! Servers' questions (`elicitation/create`) that a person answers through Switchboard instead of
//! the editor: when the editor did not declare it can ask (Claude Desktop cannot), or when the
//! server's `ask` setting says so. Each waits here, listed for the dashboard and the desktop app
//! (`GET /api/questions`), until a person answers it (`POST /api/questions/{id}`), its server's
//! call ends, or the server's `request_timeout` passes, which cancels it with the reason.
//!
//! A form is checked before it is shown (`form.rs`): one the dashboard cannot render is declined
//! at once, saying which field. A URL question is never opened by Switchboard: the person opens
//! it, warned when it is not https or not on a remote server's own site.

mod form;

pub use form::{FieldProblem, FormError, Misfit};

use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use super::capabilities::ClientCapabilities;
use super::waitlist::{NotTaken, Unanswered, Waitlist};
use config::{Ask, BackendConfig, Launch};
use platform::clock::unix_millis;
use wire::jsonrpc::{self, ErrorObject};

/// Where an answer's reason goes in its `_meta`.
const REASON: &str = "switchboard/reason";

/// A server's question as the person is shown it.
#[derive(Debug, Clone, Serialize)]
pub struct Question {
    pub id: u64,
    pub server: String,
    /// The editor whose call the server asks during, as its `clientInfo` names it: one when it
    /// is known; each editor with a call in flight at the server when calls of several were
    /// and nothing told which one it asks during (a local server's request names no call);
    /// none when no call was in flight.
    pub editors: Vec<String>,
    /// The profile of those calls, when they share one.
    pub profile: Option<String>,
    pub message: String,
    #[serde(flatten)]
    pub asks: Asks,
    /// When it was asked, and when no answer cancels it (Unix milliseconds).
    pub asked_at: u64,
    pub deadline: u64,
}

/// What a question asks for.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Asks {
    /// A form, described by a JSON schema ([`form`]).
    Form { schema: Value },
    /// A visit to `url` (to sign in, pay, or give something the editor must not see).
    Url {
        url: String,
        /// The site it is on, as the person should read it before going there.
        host: String,
        /// Why it deserves a second look: not https, or not the remote server's own site.
        warning: Option<String>,
    },
}

/// How a person answers, as the spec's `ElicitResult` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Accept,
    Decline,
    Cancel,
}

impl Action {
    /// Its name, as the spec writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Accept => "accept",
            Action::Decline => "decline",
            Action::Cancel => "cancel",
        }
    }
}

/// A person's answer, and who gave it.
#[derive(Debug)]
struct Answer {
    action: Action,
    content: Option<Map<String, Value>>,
    by: String,
}

/// Who puts a server's question to the person. (Who an editor's answer to a request forwarded
/// to it goes to is `upstream::ReplyTo`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Asker {
    /// The editor of the call, which asks the person itself.
    Editor,
    /// Switchboard, through the dashboard or the desktop app.
    Switchboard,
    /// Nobody: the server is told its questions are turned off.
    Nobody,
}

/// Who asks a question of a server set to `ask`, for an editor that can (or cannot) ask it.
pub(super) fn asker(ask: Ask, editor_can: bool) -> Asker {
    match ask {
        Ask::Auto if editor_can => Asker::Editor,
        Ask::Auto | Ask::Switchboard => Asker::Switchboard,
        Ask::Editor => Asker::Editor,
        Ask::Never => Asker::Nobody,
    }
}

/// What a 2026-07-28 server is told the editor of a call can be asked, given its `ask`: form and
/// URL questions when the person answers what the editor cannot, none when they are off.
pub(super) fn told(mut capabilities: ClientCapabilities, ask: Ask) -> ClientCapabilities {
    match ask {
        Ask::Auto | Ask::Switchboard => {
            capabilities.elicitation_form = true;
            capabilities.elicitation_url = true;
        }
        Ask::Editor => {}
        Ask::Never => {
            capabilities.elicitation_form = false;
            capabilities.elicitation_url = false;
        }
    }
    capabilities
}

/// The error a server gets for a question its `ask = "never"` turns off.
pub(super) fn turned_off(server: &str) -> ErrorObject {
    ErrorObject::new(
        jsonrpc::METHOD_NOT_FOUND,
        format!("questions of server {server} are turned off (ask = \"never\")"),
    )
}

/// Why an answer does not fit its question.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerError {
    /// The content is not an answer to the form.
    #[error(transparent)]
    Form(#[from] FormError),
    #[error("accepting a form needs its content")]
    NoContent,
    #[error("only an accepted form has content")]
    ContentNotAsked,
}

/// Why a URL question cannot be asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum BadUrl {
    #[error("its url is not a URL ({0})")]
    NotUrl(#[source] url::ParseError),
    #[error("its url is a {scheme} address, not a web page")]
    NotWeb { scheme: String },
}

/// The questions waiting for a person.
#[derive(Default)]
pub struct Questions(Waitlist<Question, Answer>);

impl Questions {
    /// The questions waiting, oldest first.
    pub fn waiting(&self) -> Vec<Question> {
        self.0.waiting()
    }

    /// Answers question `id` with `action` and, to accept a form, its `content`; refused when
    /// the content does not fit the question, with the reason.
    pub fn answer(
        &self,
        id: u64,
        action: Action,
        content: Option<Map<String, Value>>,
        by: &str,
    ) -> Result<(), NotTaken<AnswerError>> {
        self.0.answer(id, |question| {
            match (&question.asks, action, &content) {
                (Asks::Form { schema }, Action::Accept, Some(content)) => {
                    form::validate(schema, content)?;
                }
                (Asks::Form { .. }, Action::Accept, None) => {
                    return Err(AnswerError::NoContent);
                }
                (_, _, Some(_)) => {
                    return Err(AnswerError::ContentNotAsked);
                }
                _ => {}
            }
            tracing::info!(id, action = action.as_str(), by, server = %question.server, "a person answered a server's question");
            Ok(Answer {
                action,
                content: content.clone(),
                by: by.to_owned(),
            })
        })
    }

    /// Told whenever the questions waiting change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }

    /// Puts `params` of an `elicitation/create` from `server` to a person, for `editors` in
    /// `profile`; the `ElicitResult` the server gets.
    pub(super) async fn ask(
        &self,
        server: &BackendConfig,
        editors: Vec<String>,
        profile: Option<String>,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let params: Map<String, Value> = params
            .and_then(|params| serde_json::from_str(params.get()).ok())
            .ok_or_else(|| malformed(server, "its params are not an object"))?;
        let message = params
            .get("message")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed(server, "it has no message"))?
            .to_owned();
        let asks = match params.get("mode").and_then(Value::as_str) {
            Some("url") => {
                let url = params
                    .get("url")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed(server, "a URL question has no url"))?;
                url_question(server, url).map_err(|why| malformed(server, &why.to_string()))?
            }
            None | Some("form") => {
                let schema = params
                    .get("requestedSchema")
                    .cloned()
                    .unwrap_or_else(|| json!({ "type": "object" }));
                if let Err(why) = form::check(&schema) {
                    tracing::warn!(server = %server.name, %why, "a server's form cannot be shown; declined");
                    let reason =
                        format!("Switchboard cannot show this form ({why}), so it was declined");
                    return Ok(result(
                        json!({ "action": "decline", "_meta": { REASON: reason } }),
                    ));
                }
                Asks::Form { schema }
            }
            Some(other) => {
                return Err(malformed(server, &format!("its mode {other:?} is unknown")));
            }
        };
        let timeout = server.request_timeout;
        let now = unix_millis(SystemTime::now());
        let question = |id| Question {
            id,
            server: server.name.clone(),
            editors,
            profile,
            message,
            asks,
            asked_at: now,
            deadline: now + u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        };
        tracing::info!(server = %server.name, "a server's question waits for a person");
        Ok(result(match self.0.wait(question, timeout).await {
            Ok(Answer {
                action: Action::Accept,
                content: Some(content),
                by,
            }) => {
                json!({ "action": "accept", "content": content, "_meta": { REASON: format!("the person answered in {by}") } })
            }
            Ok(Answer { action, by, .. }) => {
                json!({ "action": action, "_meta": { REASON: format!("the person answered in {by}") } })
            }
            Err(unanswered) => {
                json!({ "action": "cancel", "_meta": { REASON: unanswered_reason(unanswered, timeout) } })
            }
        }))
    }
}

fn unanswered_reason(unanswered: Unanswered, timeout: Duration) -> String {
    match unanswered {
        Unanswered::TimedOut => format!(
            "nobody answered within {} s (the server's request_timeout), so it was cancelled",
            timeout.as_secs()
        ),
        Unanswered::Stopped => "Switchboard stopped before anyone answered".to_owned(),
    }
}

fn result(value: Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(&value).expect("JSON")
}

fn malformed(server: &BackendConfig, why: &str) -> ErrorObject {
    ErrorObject::new(
        jsonrpc::INVALID_PARAMS,
        format!("server {}'s question cannot be asked: {why}", server.name),
    )
}

/// A URL question, with what should make the person look twice.
fn url_question(server: &BackendConfig, url: &str) -> Result<Asks, BadUrl> {
    let parsed = url::Url::parse(url).map_err(BadUrl::NotUrl)?;
    if !matches!(parsed.scheme(), "https" | "http") {
        return Err(BadUrl::NotWeb {
            scheme: parsed.scheme().to_owned(),
        });
    }
    let host = parsed.host_str().unwrap_or_default().to_owned();
    let own = match &server.launch {
        Launch::Remote(remote) => url::Url::parse(&remote.url).ok(),
        Launch::Process(_) => None,
    };
    let warning = if parsed.scheme() != "https" {
        Some("This address is not https: what you enter there can be read on its way.".to_owned())
    } else {
        own.filter(|own| own.origin() != parsed.origin())
            .map(|own| {
                format!(
                    "This address is not on {}'s own site ({}).",
                    server.name,
                    own.host_str().unwrap_or_default()
                )
            })
    };
    Ok(Asks::Url {
        url: parsed.to_string(),
        host,
        warning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(url: &str) -> BackendConfig {
        let launch = Launch::Remote(config::RemoteServer::new(url));
        BackendConfig::with_launch("remote", launch)
    }

    fn warning(server: &BackendConfig, url: &str) -> Option<String> {
        match url_question(server, url).expect("a URL question") {
            Asks::Url { warning, .. } => warning,
            Asks::Form { .. } => unreachable!(),
        }
    }

    #[test]
    fn a_url_not_https_or_off_the_servers_site_is_flagged() {
        let server = remote("https://mcp.example.com/mcp");
        assert_eq!(warning(&server, "https://mcp.example.com/pay?x=1"), None);
        assert_eq!(
            warning(&server, "https://evil.example.net/pay"),
            Some("This address is not on remote's own site (mcp.example.com).".to_owned())
        );
        assert!(
            warning(&server, "http://mcp.example.com/pay").is_some_and(|w| w.contains("not https"))
        );
        let local = BackendConfig::new("local", "server", Vec::new());
        assert_eq!(warning(&local, "https://accounts.example.org/"), None);
        assert!(url_question(&local, "javascript:alert(1)").is_err());
        assert!(url_question(&local, "not a url").is_err());
    }

    #[test]
    fn who_asks_follows_the_setting_and_the_editor() {
        assert_eq!(asker(Ask::Auto, true), Asker::Editor);
        assert_eq!(asker(Ask::Auto, false), Asker::Switchboard);
        assert_eq!(asker(Ask::Switchboard, true), Asker::Switchboard);
        assert_eq!(asker(Ask::Editor, false), Asker::Editor);
        assert_eq!(asker(Ask::Never, true), Asker::Nobody);
    }

    #[tokio::test]
    async fn a_form_is_answered_once_and_only_with_content_that_fits() {
        let questions = Questions::default();
        let server = BackendConfig::new("forms", "server", Vec::new());
        let params = RawValue::from_string(
            json!({ "message": "Who?", "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] } })
                .to_string(),
        )
        .expect("JSON");
        let mut changes = questions.subscribe();
        let ask = questions.ask(&server, vec!["editor".into()], None, Some(&params));
        let answer = async {
            changes.changed().await.expect("told");
            let id = questions.waiting()[0].id;
            let empty = Map::new();
            let rejected = questions.answer(id, Action::Accept, Some(empty), "the dashboard");
            let Err(NotTaken::Rejected(why)) = rejected else {
                panic!("{rejected:?}");
            };
            assert_eq!(why.to_string(), "\"name\" is required");
            let mut content = Map::new();
            content.insert("name".into(), json!("Ada"));
            assert_eq!(
                questions.answer(id, Action::Accept, Some(content), "the dashboard"),
                Ok(())
            );
            assert_eq!(
                questions.answer(id, Action::Decline, None, "the dashboard"),
                Err(NotTaken::NotWaiting)
            );
        };
        let (result, ()) = tokio::join!(ask, answer);
        let result: Value = serde_json::from_str(result.expect("answered").get()).expect("JSON");
        assert_eq!(result["action"], "accept");
        assert_eq!(result["content"], json!({ "name": "Ada" }));
    }

    #[tokio::test(start_paused = true)]
    async fn a_question_nobody_answers_is_cancelled_with_the_reason() {
        let questions = Questions::default();
        let mut server = BackendConfig::new("slow", "server", Vec::new());
        server.request_timeout = Duration::from_secs(5);
        let params = RawValue::from_string(r#"{"message":"Sure?"}"#.into()).expect("JSON");
        let result = questions
            .ask(&server, Vec::new(), None, Some(&params))
            .await
            .expect("an answer");
        let result: Value = serde_json::from_str(result.get()).expect("JSON");
        assert_eq!(result["action"], "cancel");
        assert_eq!(
            result["_meta"][REASON],
            "nobody answered within 5 s (the server's request_timeout), so it was cancelled"
        );
        assert!(questions.waiting().is_empty());
    }

    #[tokio::test]
    async fn a_form_that_cannot_be_shown_is_declined_saying_which_field() {
        let questions = Questions::default();
        let server = BackendConfig::new("forms", "server", Vec::new());
        let params = RawValue::from_string(
            r#"{"message":"Where?","requestedSchema":{"type":"object","properties":{"at":{"type":"object"}}}}"#.into(),
        )
        .expect("JSON");
        let result = questions
            .ask(&server, Vec::new(), None, Some(&params))
            .await
            .expect("an answer");
        let result: Value = serde_json::from_str(result.get()).expect("JSON");
        assert_eq!(result["action"], "decline");
        assert!(
            result["_meta"][REASON]
                .as_str()
                .is_some_and(|why| why.contains("field \"at\"")),
            "{result}"
        );
    }
}
