//! The cheap, cloneable handle to one backend, and the commands it sends to the backend's task.

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot, watch};

use crate::output::OutputLog;
use crate::rpc::{ClientMeta, Connection, ProgressSink};
use crate::status::BackendStatus;
use crate::subscriptions::{ResourceWatch, Subscriptions};
use crate::{Applied, CallError, ControlError};
use config::BackendConfig;
use wire::era::Era;
use wire::method::Method;

/// A cheap, cloneable handle to one backend.
#[derive(Clone)]
pub struct BackendHandle {
    pub(super) name: Arc<str>,
    pub(super) commands: mpsc::UnboundedSender<Command>,
    pub(super) status: watch::Receiver<BackendStatus>,
    pub(super) connection: watch::Receiver<Option<Connection>>,
    pub(super) output: Arc<OutputLog>,
    pub(super) config: watch::Receiver<Arc<BackendConfig>>,
    pub(super) subscriptions: Arc<Subscriptions>,
}

pub(super) type Ack = oneshot::Sender<Result<(), ControlError>>;

/// What a handle asks of its backend's task.
pub(super) enum Command {
    Start(Option<Ack>),
    Stop(Ack),
    Restart(Ack),
    Reconfigure(Box<BackendConfig>, oneshot::Sender<Applied>),
    /// Like `Shutdown`, for a backend removed from the config.
    Remove(Ack),
    Shutdown(Ack),
}

impl BackendHandle {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The backend's name, shared.
    pub fn shared_name(&self) -> Arc<str> {
        self.name.clone()
    }

    /// Whether both handles reach the same backend task (a backend removed and added again by
    /// reloads is a new one).
    pub fn same_backend(&self, other: &BackendHandle) -> bool {
        self.commands.same_channel(&other.commands)
    }

    /// The config the backend runs with (a reload may replace it).
    pub fn config(&self) -> Arc<BackendConfig> {
        self.config.borrow().clone()
    }

    /// Starts the backend (and resets its restart budget); returns once it is ready.
    pub async fn start(&self) -> Result<(), ControlError> {
        self.command(|ack| Command::Start(Some(ack))).await
    }

    /// Stops the backend and its whole process group; returns once nothing of it runs.
    pub async fn stop(&self) -> Result<(), ControlError> {
        self.command(Command::Stop).await
    }

    /// Stops (if running) and starts again; returns once it is ready.
    pub async fn restart(&self) -> Result<(), ControlError> {
        self.command(Command::Restart).await
    }

    /// The current status.
    pub fn status(&self) -> BackendStatus {
        self.status.borrow().clone()
    }

    /// Whether the running server speaks the stateless era (2026-07-28), without copying the
    /// status.
    pub fn is_stateless_era(&self) -> bool {
        self.status
            .borrow()
            .server
            .as_ref()
            .is_some_and(|server| server.era == Era::Stateless)
    }

    /// A receiver that sees every published status.
    pub fn watch_status(&self) -> watch::Receiver<BackendStatus> {
        self.status.clone()
    }

    /// Requests sent to the running process and not answered yet (0 when none runs).
    pub fn pending_requests(&self) -> usize {
        self.connection
            .borrow()
            .as_ref()
            .map_or(0, Connection::pending_count)
    }

    /// The backend's captured stderr and stdout noise.
    pub fn output(&self) -> &Arc<OutputLog> {
        &self.output
    }

    /// Sends a request to the backend with its configured deadline.
    pub async fn request(
        &self,
        method: &Method,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, CallError> {
        let timeout = self.config.borrow().request_timeout;
        self.request_with_timeout(method, params, timeout).await
    }

    /// Sends a request whose progress notifications go to `progress` (see
    /// [`Connection::request_for_client`]).
    pub async fn request_with_progress(
        &self,
        method: &Method,
        params: Option<&RawValue>,
        timeout: Duration,
        progress: Option<ProgressSink>,
    ) -> Result<Box<RawValue>, CallError> {
        self.request_for_client(method, params, timeout, progress, ClientMeta::default())
            .await
    }

    /// Like [`BackendHandle::request_with_progress`], and a stateless-era backend is told what
    /// `client` says about the editor of this request (see [`Connection::request_for_client`]).
    pub async fn request_for_client(
        &self,
        method: &Method,
        params: Option<&RawValue>,
        timeout: Duration,
        progress: Option<ProgressSink>,
        client: ClientMeta<'_>,
    ) -> Result<Box<RawValue>, CallError> {
        let connection = self.ready_connection()?;
        Ok(connection
            .request_for_client(method, params, timeout, progress, client)
            .await?)
    }

    /// Sends a request with an explicit deadline.
    pub async fn request_with_timeout(
        &self,
        method: &Method,
        params: Option<&RawValue>,
        timeout: Duration,
    ) -> Result<Box<RawValue>, CallError> {
        Ok(self
            .ready_connection()?
            .request(method, params, timeout)
            .await?)
    }

    /// Wants updates of the resource `uri` from this backend, a stateless-era one, for as long as
    /// the returned watch lives: its listen names the resource (see [`Subscriptions`]), across
    /// restarts too.
    pub fn watch_resource(&self, uri: &str) -> ResourceWatch {
        self.subscriptions.watch(uri)
    }

    /// Sends a notification to the backend, if it is ready.
    pub async fn notify(
        &self,
        method: &Method,
        params: Option<&RawValue>,
    ) -> Result<(), CallError> {
        Ok(self.ready_connection()?.notify(method, params).await?)
    }

    /// The connection of the running process, or why there is none.
    fn ready_connection(&self) -> Result<Connection, CallError> {
        let connection = self.connection.borrow().clone();
        connection.ok_or_else(|| CallError::Unavailable {
            backend: self.name.to_string(),
            state: self.status.borrow().state,
        })
    }

    pub(super) fn send(&self, command: Command) {
        // A closed channel means the task is gone, which only happens after shutdown.
        let _ = self.commands.send(command);
    }

    async fn command(&self, make: impl FnOnce(Ack) -> Command) -> Result<(), ControlError> {
        let (ack, done) = oneshot::channel();
        self.send(make(ack));
        done.await.unwrap_or(Err(ControlError::ShuttingDown))
    }
}
