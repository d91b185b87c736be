//! Live config: reloading the config file into the running engine, on request and on every save
//! (a `notify` watcher on the file's folder), and writing it for the control API.
//!
//! A reload applies what it can, as the start does: a server or a profile with an error is left
//! out, with its reasons, and everything else in the file is applied as a diff by
//! [`Engine::apply`](supervisor::Engine::apply); so one server whose command is not installed
//! never holds back the next change. A file that cannot be read as a config (a syntax error,
//! not UTF-8, empty, gone) changes nothing that runs, and neither does an error in a settings
//! table or the `default` profile, which has no "left out" that could not weaken what runs
//! ([`verdict`] says why). [`ConfigState`] (which `/api/config`, the dashboard's banner and the
//! tray show) and [`ReloadOutcome`] say which of these happened. An empty file is a save under
//! way: an editor that saves in place empties the file before it writes it.
//!
//! [`Reloader::write`] is how the control API changes the file: it judges the changed text
//! first and writes it only if it would apply, then applies it, once.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use notify::{RecursiveMode, Watcher};
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use config::edit::EditError;
use config::{Config, DesktopConfig, Diagnostic, EndpointConfig, RegistrySettings};
use hub::Hub;
use platform::clock::unix_millis;
use supervisor::ApplyReport;
use supervisor::Engine;
use transport::guard::EndpointToken;

#[cfg(test)]
mod tests;
pub mod verdict;

pub use verdict::{LeftOut, LeftOutKind, Verdict, judge};

/// After an event about the config file, how long the file must stay quiet before it is read:
/// one save often arrives as several events (truncate, write, rename, chmod).
const QUIET: Duration = Duration::from_millis(150);
/// The longest a reload waits for quiet while events keep coming.
const MOST_DELAY: Duration = Duration::from_secs(2);

/// The config file as Switchboard last saw it, and what runs from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigState {
    pub path: PathBuf,
    /// When the running config was read (and applied), in milliseconds since the Unix epoch.
    pub loaded_at_ms: u64,
    /// When the file was last read, applied or not.
    pub checked_at_ms: u64,
    /// How what runs relates to the file as last read.
    pub status: ConfigStatus,
    /// What is wrong, in one sentence, while `status` is not [`ConfigStatus::Applied`]: the tray,
    /// the attention list and the dashboard's banner all show this one.
    pub problem: Option<String>,
    pub diagnostics: Vec<Diagnostic>,
    /// The servers and profiles of the running config left out for their errors, and why.
    pub left_out: Vec<LeftOut>,
    /// Whether `/mcp` takes requests without a token because the config predates it (see
    /// [`Config::endpoint_open_by_default`]).
    pub endpoint_open: bool,
    /// Plain statements about the last reload a person should know, such as a setting that
    /// takes effect only when Switchboard restarts.
    pub notes: Vec<String>,
    /// The desktop app's settings in effect.
    pub desktop: DesktopConfig,
    /// Where servers are found, and whether added ones wait for review.
    #[serde(skip)]
    pub registry: RegistrySettings,
    /// The running backends' names in file order, which `/api/backends` follows.
    #[serde(skip)]
    pub backend_order: Vec<String>,
}

/// How what runs relates to the config file as last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigStatus {
    /// The file as last read runs, and it has no errors.
    Applied,
    /// The file as last read runs without its servers and profiles in error (`left_out`), at
    /// startup and after a reload alike.
    AppliedInPart,
    /// The file as last read cannot be read as a config, or has an error outside its servers
    /// and profiles, so the reload was refused: the last valid config runs.
    Refused,
    /// The file is gone, empty or cannot be read: the last config runs until it is back.
    Unread,
}

impl ConfigState {
    /// The state of a config read and applied just now.
    pub fn loaded(config: &Config) -> ConfigState {
        ConfigState::applied(config, verdict::left_out(config))
    }

    /// The state of `config` applied just now without `left_out`.
    fn applied(config: &Config, left_out: Vec<LeftOut>) -> ConfigState {
        let now = unix_millis(SystemTime::now());
        let problem = verdict::applied_problem(config, &left_out);
        ConfigState {
            path: config.path.clone(),
            loaded_at_ms: now,
            checked_at_ms: now,
            status: match problem {
                None => ConfigStatus::Applied,
                Some(_) => ConfigStatus::AppliedInPart,
            },
            problem,
            diagnostics: config.diagnostics.clone(),
            left_out,
            endpoint_open: config.endpoint_open_by_default(),
            notes: Vec::new(),
            desktop: config.desktop.clone(),
            registry: config.registry.clone(),
            backend_order: config
                .backends
                .iter()
                .map(|backend| backend.name.clone())
                .collect(),
        }
    }

    /// The file could not be read as a config; what runs stays, and `message` says why.
    fn unread(&mut self, now: u64, problem: &str, message: String) {
        self.checked_at_ms = now;
        self.status = ConfigStatus::Unread;
        self.problem = Some(problem.to_owned());
        self.notes = vec![message];
    }
}

/// What one reload did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReloadOutcome {
    /// The file is what runs now, without the servers and profiles `left_out` names.
    Applied {
        #[serde(flatten)]
        report: ApplyReport,
        notes: Vec<String>,
        left_out: Vec<LeftOut>,
    },
    /// The file cannot be read as a config, or has an error outside its servers and profiles;
    /// nothing changed. `problem` says which, as the config state does.
    Refused {
        problem: String,
        diagnostics: Vec<Diagnostic>,
    },
    /// The file is gone, empty or cannot be read; nothing changed.
    Missing { message: String },
}

impl std::fmt::Display for ReloadOutcome {
    /// One paragraph: `Applied: added a. `time` is left out: `uvx` was not found on PATH.`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReloadOutcome::Applied {
                report,
                notes,
                left_out,
            } => {
                write!(f, "Applied: {report}.")?;
                for part in left_out {
                    write!(f, " {part}.")?;
                }
                for note in notes {
                    write!(f, " {note}.")?;
                }
                Ok(())
            }
            ReloadOutcome::Refused { problem, .. } => write!(f, "{problem}."),
            ReloadOutcome::Missing { message } => write!(f, "{message}."),
        }
    }
}

/// Why [`Reloader::write`] left the config file as it was.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The change cannot be made to this file.
    #[error("{0}")]
    Edit(EditError),
    /// The file as changed would not apply; it was not written.
    #[error("the change was not written: with it, {reason}{}", listed(diagnostics))]
    WouldNotApply {
        reason: String,
        diagnostics: Vec<Diagnostic>,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// `: ` and the errors among `diagnostics`, each as `check` prints it, or nothing.
fn listed(diagnostics: &[Diagnostic]) -> String {
    let errors: Vec<String> = diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.severity == config::Severity::Error)
        .map(Diagnostic::to_string)
        .collect();
    match errors.is_empty() {
        true => String::new(),
        false => format!(": {}", errors.join("; ")),
    }
}

/// Reloads one config file into the running engine. Cheap to clone.
#[derive(Clone)]
pub struct Reloader {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    engine: Arc<Engine>,
    /// Serves the profiles.
    hub: Hub,
    state: watch::Sender<ConfigState>,
    /// The endpoint settings the listeners were started with.
    endpoint: EndpointConfig,
    /// The token `/mcp` requires, which a reload changes at once.
    mcp_token: EndpointToken,
    /// Where the token Switchboard generates for `/mcp` is kept.
    data_dir: PathBuf,
    /// Whether `--listen` overrode `endpoint.listen` (then a change in the file does not matter).
    listen_overridden: bool,
    /// The bytes of the file as last read; held while a reload runs, so reloads never overlap.
    last_read: Mutex<Option<Vec<u8>>>,
}

impl Reloader {
    /// A reloader for `config`, which `engine` runs and `hub` serves, with listeners started
    /// from `endpoint`; `/mcp` requires `mcp_token`, generated in `data_dir` when it is
    /// Switchboard's own.
    pub fn new(
        engine: Arc<Engine>,
        hub: Hub,
        config: &Config,
        endpoint: EndpointConfig,
        listen_overridden: bool,
        mcp_token: EndpointToken,
        data_dir: PathBuf,
    ) -> Reloader {
        Reloader {
            inner: Arc::new(Inner {
                path: config.path.clone(),
                engine,
                hub,
                state: watch::channel(ConfigState::loaded(config)).0,
                endpoint,
                mcp_token,
                data_dir,
                listen_overridden,
                last_read: Mutex::new(std::fs::read(&config.path).ok()),
            }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Where Switchboard's own files are, its generated tokens among them.
    pub(crate) fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    /// The config state, updated after every reload.
    pub fn state(&self) -> watch::Receiver<ConfigState> {
        self.inner.state.subscribe()
    }

    /// Reads the file and applies what of it can apply (see [`judge`]).
    pub async fn reload(&self) -> ReloadOutcome {
        let mut last_read = self.inner.last_read.lock().await;
        let read = std::fs::read(&self.inner.path);
        if let Ok(bytes) = &read {
            *last_read = Some(bytes.clone());
        }
        self.apply(judge(&self.inner.path, read)).await
    }

    /// Changes the config file by `change`, which takes its text and gives the changed text,
    /// and applies the change: provided the changed file would apply (see [`judge`]), it is
    /// written, then applied as [`Reloader::reload`] would, once. Otherwise the file stays as
    /// it was, and so does what runs.
    pub async fn write(
        &self,
        change: impl FnOnce(&str) -> Result<String, EditError>,
    ) -> Result<ReloadOutcome, WriteError> {
        let path = &self.inner.path;
        let mut last_read = self.inner.last_read.lock().await;
        let (changed, config, left_out) = self.changed(change)?;
        platform::atomic::write_keeping_permissions(path, changed.as_bytes()).map_err(
            |source| WriteError::Write {
                path: path.clone(),
                source,
            },
        )?;
        // The watcher sees the file as last read, and leaves it be.
        *last_read = Some(changed.into_bytes());
        Ok(self.run(*config, left_out).await)
    }

    /// Whether [`Reloader::write`] with `change` would write the file, as it reads now: for a
    /// caller that has more to do first, and nothing to do if the change would not apply.
    pub fn check(
        &self,
        change: impl FnOnce(&str) -> Result<String, EditError>,
    ) -> Result<(), WriteError> {
        self.changed(change).map(|_| ())
    }

    /// The file's text as `change` changes it, and the config it would apply.
    fn changed(
        &self,
        change: impl FnOnce(&str) -> Result<String, EditError>,
    ) -> Result<(String, Box<Config>, Vec<LeftOut>), WriteError> {
        let path = &self.inner.path;
        let text = std::fs::read_to_string(path).map_err(|source| WriteError::Read {
            path: path.clone(),
            source,
        })?;
        let changed = change(&text).map_err(WriteError::Edit)?;
        match judge(path, Ok(changed.clone().into_bytes())) {
            Verdict::Applies { config, left_out } => Ok((changed, config, left_out)),
            Verdict::Refused {
                reason,
                diagnostics,
            } => Err(WriteError::WouldNotApply {
                reason,
                diagnostics,
            }),
            Verdict::Unread { message, .. } => Err(WriteError::WouldNotApply {
                reason: message,
                diagnostics: Vec::new(),
            }),
        }
    }

    /// Like [`Reloader::reload`], but does nothing when the file reads as it did last time
    /// (editors touch files without changing them).
    async fn reload_if_changed(&self) -> Option<ReloadOutcome> {
        let mut last_read = self.inner.last_read.lock().await;
        let read = std::fs::read(&self.inner.path);
        match &read {
            Ok(bytes) if last_read.as_ref() == Some(bytes) => return None,
            Ok(bytes) => *last_read = Some(bytes.clone()),
            Err(_) if self.inner.state.borrow().status == ConfigStatus::Unread => return None,
            Err(_) => *last_read = None,
        }
        Some(self.apply(judge(&self.inner.path, read)).await)
    }

    async fn apply(&self, verdict: Verdict) -> ReloadOutcome {
        match verdict {
            Verdict::Applies { config, left_out } => self.run(*config, left_out).await,
            Verdict::Refused {
                reason,
                diagnostics,
            } => self.refuse(&reason, diagnostics),
            Verdict::Unread { problem, message } => {
                tracing::warn!("{message}");
                let now = unix_millis(SystemTime::now());
                self.inner
                    .state
                    .send_modify(|state| state.unread(now, problem, message.clone()));
                ReloadOutcome::Missing { message }
            }
        }
    }

    /// Makes `config` what runs, without `left_out`.
    async fn run(&self, config: Config, left_out: Vec<LeftOut>) -> ReloadOutcome {
        let path = &self.inner.path;
        let mut notes = self.endpoint_notes(&config.endpoint);
        notes.extend(self.apply_token(&config.endpoint));
        let report = self.inner.engine.apply(config.backends.clone()).await;
        self.inner.hub.set_profiles(config.profiles.clone());
        if let Some(activity) = self.inner.hub.activity() {
            activity.configure(config.activity.clone(), config.secret_values());
        }
        self.inner
            .hub
            .pins()
            .set_approve_new(config.security.approve_new_tools);
        tracing::info!(config = %path.display(), "config reloaded: {report}");
        for diagnostic in &config.diagnostics {
            tracing::warn!("{diagnostic}");
        }
        for note in &notes {
            tracing::warn!("{note}");
        }
        let mut state = ConfigState::applied(&config, left_out.clone());
        state.notes = notes.clone();
        self.inner.state.send_replace(state);
        ReloadOutcome::Applied {
            report,
            notes,
            left_out,
        }
    }

    /// Keeps what runs and reports why the file was refused.
    fn refuse(&self, reason: &str, diagnostics: Vec<Diagnostic>) -> ReloadOutcome {
        let problem = Verdict::refused_problem(reason);
        tracing::warn!(config = %self.inner.path.display(), "{problem}; nothing was changed");
        for diagnostic in &diagnostics {
            tracing::warn!("{diagnostic}");
        }
        let now = unix_millis(SystemTime::now());
        self.inner.state.send_modify(|state| {
            state.checked_at_ms = now;
            state.status = ConfigStatus::Refused;
            state.problem = Some(problem.clone());
            state.diagnostics = diagnostics.clone();
            state.notes = Vec::new();
        });
        ReloadOutcome::Refused {
            problem,
            diagnostics,
        }
    }

    /// What changed in `[endpoint]` that only a restart of Switchboard applies.
    fn endpoint_notes(&self, new: &EndpointConfig) -> Vec<String> {
        let running = &self.inner.endpoint;
        let mut notes = Vec::new();
        if new.listen != running.listen && !self.inner.listen_overridden {
            notes.push(format!(
                "endpoint.listen changed to {}; the endpoint stays on {} until Switchboard restarts",
                new.listen, running.listen
            ));
        }
        if new.max_body_size != running.max_body_size {
            notes.push(format!(
                "endpoint.max_body_size changed to {} bytes; the limit stays {} until Switchboard restarts",
                new.max_body_size, running.max_body_size
            ));
        }
        notes
    }

    /// Makes the token `endpoint` asks for the one `/mcp` requires, at once; what changed.
    fn apply_token(&self, endpoint: &EndpointConfig) -> Option<String> {
        let token = match transport::token::endpoint_token(
            endpoint,
            &self.inner.data_dir,
            transport::token::Missing::Make,
        ) {
            Ok(token) => token,
            Err(error) => return Some(format!("{error}; /mcp keeps the token it had")),
        };
        let required = token.is_some();
        let had = self.inner.mcp_token.get().is_some();
        if !self.inner.mcp_token.set(token) {
            return None;
        }
        Some(
            match (had, required) {
                (false, _) => "/mcp now requires its token",
                (true, false) => "/mcp now takes requests without a token",
                (true, true) => "/mcp's token changed; editors need the new one",
            }
            .to_owned(),
        )
    }

    /// Watches the config file's folder and reloads after each burst of changes to the file
    /// (saves in place, atomic renames, delete and re-create). Other files in the folder, such
    /// as editors' swap and backup files, are ignored.
    pub fn watch(&self, stop: CancellationToken) -> notify::Result<JoinHandle<()>> {
        let folder = self
            .inner
            .path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let file_name = self.inner.path.file_name().map(ToOwned::to_owned);
        let (events_tx, mut events) = mpsc::unbounded_channel();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let concerns_file = match &event {
                    Ok(event) => event
                        .paths
                        .iter()
                        .any(|path| path.file_name() == file_name.as_deref()),
                    Err(_) => true,
                };
                if concerns_file {
                    let _ = events_tx.send(event);
                }
            })?;
        watcher.watch(&folder, RecursiveMode::NonRecursive)?;
        tracing::info!(folder = %folder.display(), "watching the config file");
        let reloader = self.clone();
        Ok(tokio::spawn(async move {
            // The watcher stops when dropped, so the task keeps it.
            let _watcher = watcher;
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    event = events.recv() => match event {
                        Some(Ok(_)) => {}
                        Some(Err(error)) => {
                            tracing::warn!(%error, "the config watcher reported an error");
                            continue;
                        }
                        None => return,
                    },
                }
                let burst_end = tokio::time::Instant::now() + MOST_DELAY;
                loop {
                    let quiet = tokio::time::sleep(QUIET);
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = quiet => break,
                        () = tokio::time::sleep_until(burst_end) => break,
                        more = events.recv() => if more.is_none() { return },
                    }
                }
                reloader.reload_if_changed().await;
            }
        }))
    }
}
