//! The names of the JSON-RPC methods of MCP, in both eras: one [`Method`] per name the code knows,
//! and [`Method::Other`] for any other, which is passed on as it came. This file is the only place
//! a method's name is written (`tests/layout.rs` keeps it so): everything else matches on
//! [`Method`] and writes a name with [`Method::as_str`].

use std::fmt;

/// Declares [`Method`] with the name of each variant, so that reading and writing a name are one
/// table.
macro_rules! methods {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// A method of MCP's JSON-RPC, requests and notifications alike.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum Method {
            $($(#[$doc])* $variant,)*
            /// A method Switchboard does not know, as it was named.
            Other(String),
        }

        impl Method {
            /// The method named `name`.
            pub fn parse(name: &str) -> Method {
                match name {
                    $($name => Method::$variant,)*
                    other => Method::Other(other.to_owned()),
                }
            }

            /// The method's name, unless it is one Switchboard does not know.
            pub fn known_name(&self) -> Option<&'static str> {
                match self {
                    $(Method::$variant => Some($name),)*
                    Method::Other(_) => None,
                }
            }
        }
    };
}

methods! {
    Initialize = "initialize",
    Ping = "ping",
    ToolsList = "tools/list",
    ToolsCall = "tools/call",
    PromptsList = "prompts/list",
    PromptsGet = "prompts/get",
    ResourcesList = "resources/list",
    ResourceTemplatesList = "resources/templates/list",
    ResourcesRead = "resources/read",
    ResourcesSubscribe = "resources/subscribe",
    ResourcesUnsubscribe = "resources/unsubscribe",
    CompletionComplete = "completion/complete",
    LoggingSetLevel = "logging/setLevel",
    SamplingCreateMessage = "sampling/createMessage",
    ElicitationCreate = "elicitation/create",
    RootsList = "roots/list",
    TasksGet = "tasks/get",
    TasksResult = "tasks/result",
    TasksUpdate = "tasks/update",
    TasksCancel = "tasks/cancel",
    TasksList = "tasks/list",
    /// 2026-07-28: what a server is and offers, in place of `initialize`.
    ServerDiscover = "server/discover",
    /// 2026-07-28: the stream of a server's list changes, resource updates and tasks.
    SubscriptionsListen = "subscriptions/listen",
    Initialized = "notifications/initialized",
    Cancelled = "notifications/cancelled",
    Progress = "notifications/progress",
    Message = "notifications/message",
    ToolsListChanged = "notifications/tools/list_changed",
    PromptsListChanged = "notifications/prompts/list_changed",
    ResourcesListChanged = "notifications/resources/list_changed",
    ResourcesUpdated = "notifications/resources/updated",
    RootsListChanged = "notifications/roots/list_changed",
    /// 2026-07-28: which of a listen's subscriptions the server honours.
    SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged",
    /// The Tasks extension (2026-07-28): a task's state, on a listen stream.
    Tasks = "notifications/tasks",
    /// 2025-11-25: a task's new status.
    TasksStatus = "notifications/tasks/status",
    /// The Skills extension: a server's skills, and one of them by its `SKILL.md` URI.
    SkillsList = "skills/list",
    SkillsGet = "skills/get",
}

impl Method {
    /// The method's name, as the wire writes it.
    pub fn as_str(&self) -> &str {
        match self {
            Method::Other(name) => name,
            known => known.known_name().expect("a known method has a name"),
        }
    }

    /// Whether the method is one of the tasks (`tasks/…`), known or not.
    pub fn is_task(&self) -> bool {
        self.as_str().starts_with("tasks/")
    }

    /// What a request of this method is about, for the methods about one thing named in their
    /// params: a tool or prompt by its name, a resource or skill by its URI, a task by its id.
    /// The one table of it: what the activity log records a call by, what the `Mcp-Name` header
    /// of 2026-07-28 mirrors, and the name by whose prefix a call waits for its starting server.
    pub fn subject(&self) -> Option<Subject> {
        match self {
            Method::ToolsCall | Method::PromptsGet => Some(Subject::Name),
            Method::ResourcesRead
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe
            | Method::SkillsGet => Some(Subject::Uri),
            Method::TasksGet | Method::TasksResult | Method::TasksUpdate | Method::TasksCancel => {
                Some(Subject::TaskId)
            }
            _ => None,
        }
    }
}

/// What a request is about (see [`Method::subject`]), as a field of its params names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// A tool or a prompt, by its `name`.
    Name,
    /// A resource or a skill, by its `uri`.
    Uri,
    /// A task, by its `taskId`.
    TaskId,
}

impl Subject {
    /// The field of the params that names the subject.
    pub fn field(self) -> &'static str {
        match self {
            Subject::Name => "name",
            Subject::Uri => "uri",
            Subject::TaskId => "taskId",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl serde::Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Method {
    /// The method a name reads as, without copying the name unless it is one Switchboard does
    /// not know.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Method, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = Method;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a string")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Method, E> {
                Ok(Method::parse(name))
            }
        }
        deserializer.deserialize_str(Name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_back_as_written() {
        for name in ["tools/call", "notifications/tasks/status", "initialize"] {
            let method = Method::parse(name);
            assert!(!matches!(method, Method::Other(_)), "{name} is known");
            assert_eq!(method.as_str(), name);
        }
        let unknown = Method::parse("tools/sing");
        assert_eq!(unknown, Method::Other("tools/sing".to_owned()));
        assert_eq!(unknown.to_string(), "tools/sing");
        assert_eq!(unknown.known_name(), None);
        assert!(Method::parse("tasks/later").is_task());
        assert!(Method::TasksGet.is_task());
        assert!(!Method::Tasks.is_task());
    }

    #[test]
    fn a_request_about_one_thing_names_it_in_one_field() {
        assert_eq!(
            Method::ToolsCall.subject().map(Subject::field),
            Some("name")
        );
        assert_eq!(
            Method::ResourcesRead.subject().map(Subject::field),
            Some("uri")
        );
        assert_eq!(
            Method::TasksUpdate.subject().map(Subject::field),
            Some("taskId")
        );
        assert_eq!(Method::ToolsList.subject(), None);
        assert_eq!(Method::CompletionComplete.subject(), None);
        assert_eq!(Method::parse("tools/sing").subject(), None);
    }
}
