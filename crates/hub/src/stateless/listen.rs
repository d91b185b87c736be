//! `subscriptions/listen`: a session told of list changes and resource updates, which it passes
//! on with its `subscriptionId`, and of the tasks the stream names.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::Envelope2026;
use crate::answers::tasks_extension_missing;
use crate::capabilities::{ClientCapabilities, ready_with};
use crate::reply::{Notification, Reply, SessionEvent, invalid_params};
use crate::rewrite::{ObjectEntries, json_string};
use crate::session::Session;
use crate::tasks::bridge::{self, NamedTask};
use crate::{HubInner, SessionEvents, response};
use supervisor::BackendHandle;
use wire::jsonrpc::{self, ErrorObject};
use wire::meta;
use wire::method::Method;

/// How many resource URIs one listen stream may name.
const MAX_LISTEN_URIS: usize = 1000;
/// How many listen streams may be open at once: each holds a little memory until it ends.
const MAX_LISTENS: usize = 1000;
/// How many tasks one listen stream may name.
const MAX_LISTEN_TASKS: usize = 100;
/// Shortest and longest wait between two polls of a task a listen stream names.
const TASK_POLL_BOUNDS: (Duration, Duration) = (Duration::from_millis(250), Duration::from_secs(5));

/// Opens a listen stream: a session told of list changes and of updates to the resources it
/// names, which passes on those the editor opted in to.
pub(super) fn listen(
    hub: &Arc<HubInner>,
    request: &Envelope2026<'_>,
    reply: mpsc::UnboundedSender<Reply>,
) -> Result<(), ErrorObject> {
    let filter = Filter::parse(request.params.get("notifications"))?;
    if !filter.task_ids.is_empty() && !request.capabilities.tasks_extension {
        return Err(tasks_extension_missing("a listen for tasks"));
    }
    if hub.listens.fetch_add(1, Ordering::Relaxed) >= MAX_LISTENS {
        hub.listens.fetch_sub(1, Ordering::Relaxed);
        return Err(ErrorObject::new(
            jsonrpc::INTERNAL_ERROR,
            format!("{MAX_LISTENS} listen streams are open already; close one first"),
        ));
    }
    let resources: Vec<(String, BackendHandle)> = filter
        .resources
        .iter()
        .filter_map(|uri| {
            let backend = owner(hub, &request.profile, uri)
                .filter(|backend| ready_with(backend, &["resources", "subscribe"]))?;
            Some((uri.clone(), backend))
        })
        .collect();
    // Only the tasks the editor was handed: any other id is an unknown task, left out.
    let tasks: Vec<NamedTask> = filter
        .task_ids
        .iter()
        .filter_map(|task| NamedTask::open(hub, &request.profile, task))
        .collect();
    let (session, events) = hub.open_session(true, request.profile.clone());
    session.mark_initialized();
    let listen = Listen {
        hub: hub.clone(),
        session,
        events,
        filter,
        subscription: request.id.to_owned(),
        capabilities: request.capabilities,
        reply,
    };
    tokio::spawn(listen.run(resources, tasks));
    Ok(())
}

/// What a listen stream opted in to.
struct Filter {
    tools: bool,
    prompts: bool,
    resource_list: bool,
    resources: Vec<String>,
    task_ids: Vec<String>,
}

impl Filter {
    fn parse(notifications: Option<&RawValue>) -> Result<Filter, ErrorObject> {
        let Some(notifications) = notifications else {
            return Ok(Filter {
                tools: false,
                prompts: false,
                resource_list: false,
                resources: Vec::new(),
                task_ids: Vec::new(),
            });
        };
        let entries = ObjectEntries::parse(notifications.get())
            .map_err(|_| invalid_params("notifications must be an object"))?;
        let flag = |key: &str| entries.get(key).is_some_and(|value| value.get() == "true");
        let resources = match entries.get("resourceSubscriptions") {
            None => Vec::new(),
            Some(uris) => serde_json::from_str::<Vec<String>>(uris.get()).map_err(|_| {
                invalid_params("notifications.resourceSubscriptions must be an array of URIs")
            })?,
        };
        if resources.len() > MAX_LISTEN_URIS {
            return Err(invalid_params(format!(
                "a listen stream may name at most {MAX_LISTEN_URIS} resources"
            )));
        }
        let resources = resources
            .into_iter()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let task_ids = match entries.get("taskIds") {
            None => Vec::new(),
            Some(ids) => serde_json::from_str::<Vec<String>>(ids.get()).map_err(|_| {
                invalid_params("notifications.taskIds must be an array of task ids")
            })?,
        };
        if task_ids.len() > MAX_LISTEN_TASKS {
            return Err(invalid_params(format!(
                "a listen stream may name at most {MAX_LISTEN_TASKS} tasks"
            )));
        }
        let task_ids = task_ids
            .into_iter()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        Ok(Filter {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resource_list: flag("resourcesListChanged"),
            resources,
            task_ids,
        })
    }

    fn wants(&self, method: &Method) -> bool {
        match method {
            Method::ToolsListChanged => self.tools,
            Method::PromptsListChanged => self.prompts,
            Method::ResourcesListChanged => self.resource_list,
            Method::ResourcesUpdated => !self.resources.is_empty(),
            _ => false,
        }
    }
}

/// An open listen stream.
struct Listen {
    hub: Arc<HubInner>,
    /// Told of list changes and of updates to the resources the stream names.
    session: Session,
    events: SessionEvents,
    filter: Filter,
    subscription: Box<RawValue>,
    capabilities: ClientCapabilities,
    reply: mpsc::UnboundedSender<Reply>,
}

impl Listen {
    /// Subscribes to `resources` at the backends owning them, acknowledges the stream with
    /// those taken and `tasks`, then passes on list changes, resource updates and the tasks'
    /// states until the stream ends.
    async fn run(mut self, resources: Vec<(String, BackendHandle)>, tasks: Vec<NamedTask>) {
        let taken = tokio::select! {
            taken = self.subscribe(resources) => Some(taken),
            _ = self.reply.closed() => None,
        };
        if let Some(taken) = taken {
            self.acknowledge(&taken, &tasks);
            // Reporting the tasks the stream names; they end with it.
            let mut watched = JoinSet::new();
            for task in tasks {
                watched.spawn(watch_task(
                    self.hub.clone(),
                    task,
                    self.capabilities,
                    self.subscription.clone(),
                    self.reply.clone(),
                ));
            }
            self.pass_on().await;
        }
        let Listen { hub, session, .. } = self;
        hub.listens.fetch_sub(1, Ordering::Relaxed);
        let uris: Vec<String> = session.lock_state().subscriptions.drain().collect();
        // The watches of stateless-era backends' resources end with the session.
        session.close();
        for uri in uris {
            let still_wanted = hub
                .sessions()
                .iter()
                .any(|other| other.lock_state().subscriptions.contains(&uri));
            if let Some(backend) = owner(&hub, session.profile(), &uri)
                && !still_wanted
                && !backend.is_stateless_era()
            {
                send_subscription(backend, &uri, Method::ResourcesUnsubscribe);
            }
        }
    }

    /// Subscribes the stream to each of `resources` at the backend paired with it, its owner: a
    /// session-era backend is sent `resources/subscribe`; a stateless-era one's listen names the
    /// resource, taken once the server acknowledges it within its request timeout. The
    /// resources taken.
    async fn subscribe(&self, resources: Vec<(String, BackendHandle)>) -> Vec<String> {
        let mut taken = Vec::new();
        let mut watches = JoinSet::new();
        self.session.lock_state().subscriptions =
            resources.iter().map(|(uri, _)| uri.clone()).collect();
        for (uri, backend) in resources {
            if backend.is_stateless_era() {
                let timeout = backend.config().request_timeout;
                let watch = backend.watch_resource(&uri);
                watches.spawn(async move {
                    let acknowledged = watch.acknowledged(timeout).await;
                    (watch, acknowledged)
                });
            } else {
                send_subscription(backend, &uri, Method::ResourcesSubscribe);
                taken.push(uri);
            }
        }
        while let Some(Ok((watch, acknowledged))) = watches.join_next().await {
            let mut state = self.session.lock_state();
            if acknowledged {
                taken.push(watch.uri().to_owned());
                state.watches.insert(watch.uri().to_owned(), watch);
            } else {
                state.subscriptions.remove(watch.uri());
            }
        }
        taken
    }

    /// Tells the editor what the stream carries.
    fn acknowledge(&self, resources: &[String], tasks: &[NamedTask]) {
        let tasks: Vec<&str> = tasks.iter().map(|task| task.exposed.as_str()).collect();
        let acknowledged = serde_json::json!({
            "_meta": { meta::SUBSCRIPTION_ID: &*self.subscription },
            "notifications": {
                "toolsListChanged": self.filter.tools,
                "promptsListChanged": self.filter.prompts,
                "resourcesListChanged": self.filter.resource_list,
                "resourceSubscriptions": resources,
                "taskIds": tasks,
            },
        });
        let acknowledged = RawValue::from_string(acknowledged.to_string()).expect("JSON");
        let acknowledged = Notification {
            method: Method::SubscriptionsAcknowledged,
            params: Some(acknowledged),
        };
        let _ = self.reply.send(acknowledged.into());
    }

    /// Passes on list changes and resource updates until the stream ends.
    async fn pass_on(&mut self) {
        let Listen {
            session,
            events,
            filter,
            subscription,
            reply,
            ..
        } = self;
        let closed = session.call_token();
        let subscription_meta =
            format!(r#"{{"{}":{}}}"#, meta::SUBSCRIPTION_ID, subscription.get());
        let subscription_meta = RawValue::from_string(subscription_meta).expect("JSON");
        loop {
            tokio::select! {
                _ = reply.closed() => break,
                _ = closed.cancelled() => {
                    let result = format!(
                        r#"{{"resultType":"complete","_meta":{}}}"#,
                        subscription_meta.get()
                    );
                    let _ = reply.send(response(subscription, Ok(result)));
                    break;
                }
                event = events.recv() => {
                    let Some(event) = event else { break };
                    let SessionEvent::Notification(notification) = event else { continue };
                    if !filter.wants(&notification.method) {
                        continue;
                    }
                    let mut params = notification
                        .params
                        .as_deref()
                        .and_then(|params| ObjectEntries::parse(params.get()).ok())
                        .unwrap_or_else(|| ObjectEntries::parse("{}").expect("an empty object"));
                    params.set("_meta", subscription_meta.clone());
                    let stamped = Notification {
                        params: Some(params.into_raw()),
                        method: notification.method,
                    };
                    let _ = reply.send(stamped.into());
                }
            }
        }
    }
}

/// Reports `task` on a listen stream: its state as `tasks/get` shows it
/// (`notifications/tasks`), first at once and then whenever its status, message or questions
/// change, polled at its `pollIntervalMs` (within [`TASK_POLL_BOUNDS`]) until it ends. A task
/// that cannot be read any more (its server forgot it, or is gone) is reported no further.
async fn watch_task(
    hub: Arc<HubInner>,
    task: NamedTask,
    capabilities: ClientCapabilities,
    subscription: Box<RawValue>,
    reply: mpsc::UnboundedSender<Reply>,
) {
    let subscription_meta = format!(r#"{{"{}":{}}}"#, meta::SUBSCRIPTION_ID, subscription.get());
    let subscription_meta = RawValue::from_string(subscription_meta).expect("JSON");
    let mut reported = None;
    loop {
        let state = match bridge::detailed(&hub, &task, capabilities).await {
            Ok(state) => state,
            Err(error) => {
                tracing::debug!(task = %task.exposed, error = %error.message, "a listened task cannot be read");
                return;
            }
        };
        let Ok(mut params) = ObjectEntries::parse(state.get()) else {
            return;
        };
        let status = params.get_str("status").map(Cow::into_owned);
        let questions: Vec<String> = params
            .get("inputRequests")
            .and_then(|questions| ObjectEntries::parse(questions.get()).ok())
            .map(|questions| questions.iter().map(|(key, _)| key.to_owned()).collect())
            .unwrap_or_default();
        let message = params
            .get("statusMessage")
            .map(|message| message.get().to_owned());
        let wait = params
            .get("pollIntervalMs")
            .and_then(|interval| interval.get().parse().ok())
            .map_or(Duration::from_secs(1), Duration::from_millis)
            .clamp(TASK_POLL_BOUNDS.0, TASK_POLL_BOUNDS.1);
        let ended = matches!(
            status.as_deref(),
            Some("completed" | "failed" | "cancelled")
        );
        let state = (status, message, questions);
        if reported.as_ref() != Some(&state) {
            params.set("_meta", subscription_meta.clone());
            let told = Notification {
                method: Method::Tasks,
                params: Some(params.into_raw()),
            };
            if reply.send(told.into()).is_err() {
                return;
            }
            reported = Some(state);
        }
        if ended {
            return;
        }
        tokio::time::sleep(wait).await;
    }
}

/// The backend owning `uri` in `profile`'s catalog.
fn owner(hub: &HubInner, profile: &str, uri: &str) -> Option<BackendHandle> {
    let owner = hub.catalog(profile).resource_owner(uri).ok()?;
    hub.engine.backend(&owner)
}

/// Sends `resources/subscribe` or `resources/unsubscribe` for `uri` to `backend`, a session-era
/// one.
fn send_subscription(backend: BackendHandle, uri: &str, method: Method) {
    let params = format!(r#"{{"uri":{}}}"#, json_string(uri).get());
    let params = RawValue::from_string(params).expect("JSON");
    tokio::spawn(async move {
        if let Err(error) = backend.request(&method, Some(&params)).await {
            tracing::debug!(backend = backend.name(), %error, %method, "listen subscription");
        }
    });
}
