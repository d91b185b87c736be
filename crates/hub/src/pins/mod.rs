//! Tool integrity: what a server puts in front of the model is pinned by its SHA-256 the first
//! time it is seen, one file per server: each tool's definition (name, title, description,
//! schemas, annotations), each prompt's (name, title, description, arguments), and the server's
//! instructions. A later change holds it back from editors until someone approves it; so does
//! something never seen before from a server that already has pins (with `approve_new_tools`,
//! from a new server too), and a definition that cannot be checked. A server whose pin file
//! cannot be read has everything held, and only that server.
//!
//! Not pinned: `_meta` (where servers and hosts keep what changes freely, MCP Apps' UI resource
//! among it) and icons, neither of which reaches the model; resources, whose contents a server
//! serves fresh on every read.

mod canonical;
mod held;

pub use held::{ApproveError, Held, HeldReason, PinReport, PinnedKind};

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::rewrite::ObjectEntries;
use supervisor::status::Catalog;
use wire::skills::{self, Unvouched};

/// The parts of a tool's definition that are pinned; `_meta` and the rest may change freely.
const TOOL_FIELDS: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// The parts of a prompt's definition that are pinned.
const PROMPT_FIELDS: &[&str] = &["name", "title", "description", "arguments"];
/// What a skill's entry is pinned by: its frontmatter, and every file with its digest. An entry
/// that does not list every file it has with a digest cannot be checked, and is held.
const SKILL_FIELDS: &[&str] = &["uri", "frontmatter", "resources"];

/// A definition as pinned: its canonical JSON text (see [`canonical`]), kept as text so that
/// vetting, which makes one for every tool each time a server's list changes, need not check
/// JSON it wrote itself; it is read as JSON only when it is written out.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition(Box<str>);

impl Definition {
    /// A definition from its JSON text.
    pub fn new(text: Box<RawValue>) -> Definition {
        Definition(text.into())
    }

    fn sha256(&self) -> String {
        platform::hex::encode(&Sha256::digest(self.0.as_bytes()))
    }

    /// The definition's JSON text.
    pub fn text(&self) -> &str {
        &self.0
    }
}

impl Serialize for Definition {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Definition {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Definition, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Definition::new)
    }
}

/// The pins of every server; cheap to clone.
#[derive(Clone)]
pub struct Pins {
    inner: Arc<Inner>,
}

struct Inner {
    /// Where the pin files are; `None` keeps pins in memory only.
    dir: Option<PathBuf>,
    approve_new: AtomicBool,
    servers: Mutex<HashMap<String, ServerPins>>,
    /// Told when what is held changes (for the API, the dashboard and the tray).
    report: watch::Sender<Arc<PinReport>>,
    /// Told when an approval or a setting means the catalogs must be vetted again.
    revised: watch::Sender<()>,
}

/// The pin files this version writes: with prompts, instructions and skills pinned as well as
/// tools. A file without a version was written when only tools were; version 2, before skills.
const PIN_FILE_VERSION: u32 = 3;

#[derive(Default, Serialize, Deserialize)]
struct PinFile {
    #[serde(default)]
    version: u32,
    #[serde(default)]
    tools: BTreeMap<String, Pin>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    prompts: BTreeMap<String, Pin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instructions: Option<Pin>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    skills: BTreeMap<String, Pin>,
}

impl PinFile {
    fn current() -> PinFile {
        PinFile {
            version: PIN_FILE_VERSION,
            ..PinFile::default()
        }
    }

    fn get(&self, kind: PinnedKind, name: &str) -> Option<&Pin> {
        match kind {
            PinnedKind::Tool => self.tools.get(name),
            PinnedKind::Prompt => self.prompts.get(name),
            PinnedKind::Instructions => self.instructions.as_ref(),
            PinnedKind::Skill => self.skills.get(name),
        }
    }

    fn insert(&mut self, kind: PinnedKind, name: String, pin: Pin) {
        match kind {
            PinnedKind::Tool => {
                self.tools.insert(name, pin);
            }
            PinnedKind::Prompt => {
                self.prompts.insert(name, pin);
            }
            PinnedKind::Instructions => self.instructions = Some(pin),
            PinnedKind::Skill => {
                self.skills.insert(name, pin);
            }
        }
    }

    /// Every pin, with its kind and name.
    fn pins_mut(&mut self) -> impl Iterator<Item = (PinnedKind, &str, &mut Pin)> {
        let tools = self
            .tools
            .iter_mut()
            .map(|(name, pin)| (PinnedKind::Tool, name.as_str(), pin));
        let prompts = self
            .prompts
            .iter_mut()
            .map(|(name, pin)| (PinnedKind::Prompt, name.as_str(), pin));
        let instructions = self
            .instructions
            .iter_mut()
            .map(|pin| (PinnedKind::Instructions, "instructions", pin));
        let skills = self
            .skills
            .iter_mut()
            .map(|(uri, pin)| (PinnedKind::Skill, uri.as_str(), pin));
        tools.chain(prompts).chain(instructions).chain(skills)
    }

    /// Forgets the pinned definitions, which the file keeps: only a change needs one (to show
    /// it), and holding every server's definitions would be one more copy of all their tools.
    fn forget_definitions(&mut self) {
        for (_, _, pin) in self.pins_mut() {
            pin.definition = None;
        }
    }

    /// Takes back from `saved` (the file as it is) the definitions forgotten, of the pins that
    /// are still the same.
    fn recall_definitions(&mut self, saved: &PinFile) {
        for (kind, name, pin) in self.pins_mut() {
            if pin.definition.is_none()
                && let Some(kept) = saved.get(kind, name)
                && kept.sha256 == pin.sha256
            {
                pin.definition = kept.definition.clone();
            }
        }
    }

    /// The file at `path`, if it can be read.
    fn read(path: &Path) -> Option<PinFile> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }
}

#[derive(Clone, Serialize, Deserialize)]
struct Pin {
    sha256: String,
    /// `None` once the file keeps it (see [`PinFile::forget_definitions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    definition: Option<Definition>,
}

impl Pin {
    fn of(definition: Definition) -> Pin {
        Pin {
            sha256: definition.sha256(),
            definition: Some(definition),
        }
    }
}

/// Starts `server`'s pins in `dir` empty, so that everything it offers when it first runs is new
/// to a server that has pins, and waits for review (a server added from a registry).
pub fn start_empty(dir: &Path, server: &str) -> std::io::Result<()> {
    platform::files::create_private_dir(dir)?;
    let text = serde_json::to_vec_pretty(&PinFile::current()).map_err(std::io::Error::other)?;
    platform::atomic::write_private(&dir.join(format!("{server}.json")), &text)
}

/// Why a server's pin file cannot be used or kept; each says what follows from it.
#[derive(Debug, thiserror::Error)]
enum PinFileError {
    #[error(
        "cannot read the pins {}: {error}; everything of it is held until approved",
        path.display()
    )]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(
        "the pins {} are not valid ({error}); everything of it is held until approved",
        path.display()
    )]
    Invalid {
        path: PathBuf,
        #[source]
        error: serde_json::Error,
    },
    #[error(
        "cannot save the pins {}: {error}; a change made while Switchboard is stopped would go \
         unnoticed",
        path.display()
    )]
    Save {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
}

struct ServerPins {
    /// The pins, or why the file cannot be read.
    pinned: Result<PinFile, PinFileError>,
    /// What is trusted at first sight, until it is first vetted in this run.
    first_sight: FirstSight,
    /// Whether the file must be written after the first vetting, though nothing was added to it:
    /// it did not exist (a server that offers nothing at first is not new the next time), or it
    /// is of an earlier version.
    unsaved: bool,
    /// The last catalog vetted, and what of it is offered.
    vetted: Option<(Arc<Catalog>, Arc<Catalog>)>,
    /// The instructions last vetted, and whether they are offered.
    instructions: Option<(String, bool)>,
    held: Vec<Held>,
    /// Why the pins could not be written, if they could not.
    save_error: Option<PinFileError>,
}

/// What of a server is pinned when seen rather than held as new. A server never seen has its
/// first catalog and instructions trusted; a pin file of an earlier version (tools only) has
/// the prompts and instructions it never pinned trusted once.
#[derive(Clone, Copy, Default)]
struct FirstSight {
    tools: bool,
    prompts: bool,
    instructions: bool,
    skills: bool,
}

impl FirstSight {
    fn of(kind: PinnedKind, first_sight: FirstSight) -> bool {
        match kind {
            PinnedKind::Tool => first_sight.tools,
            PinnedKind::Prompt => first_sight.prompts,
            PinnedKind::Instructions => first_sight.instructions,
            PinnedKind::Skill => first_sight.skills,
        }
    }
}

/// One thing offered to be vetted: its kind, name and pinned part (or why it has none).
struct Candidate {
    kind: PinnedKind,
    name: String,
    definition: Result<Definition, (String, Definition)>,
}

/// What vetting decided for one thing.
enum Verdict {
    Offered,
    Held(Held),
}

impl Pins {
    /// Pins kept in `dir` (`None`: in memory only).
    pub(crate) fn new(dir: Option<PathBuf>, approve_new: bool) -> Pins {
        Pins {
            inner: Arc::new(Inner {
                dir,
                approve_new: AtomicBool::new(approve_new),
                servers: Mutex::new(HashMap::new()),
                report: watch::channel(Arc::default()).0,
                revised: watch::channel(()).0,
            }),
        }
    }

    /// Whether what a new server offers at first sight is held too (`approve_new_tools`).
    pub fn approves_new(&self) -> bool {
        self.inner.approve_new.load(Ordering::Relaxed)
    }

    /// Sets [`Pins::approves_new`]; a change vets every catalog again.
    pub fn set_approve_new(&self, approve_new: bool) {
        if self.inner.approve_new.swap(approve_new, Ordering::Relaxed) != approve_new {
            for server in self.lock().values_mut() {
                server.vetted = None;
                server.instructions = None;
            }
            self.inner.revised.send_replace(());
        }
    }

    /// `catalog` of `server` without the tools and prompts held back. Pins what is seen for the
    /// first time where that is trusted. Cheap when the catalog is the one vetted last.
    pub(crate) fn vet(&self, server: &str, catalog: &Arc<Catalog>) -> Arc<Catalog> {
        let approve_new = self.inner.approve_new.load(Ordering::Relaxed);
        let mut servers = self.lock();
        let pins = self.server(&mut servers, server);
        if let Some((input, output)) = &pins.vetted
            && Arc::ptr_eq(input, catalog)
        {
            return output.clone();
        }
        let first_sight = pins.first_sight;
        let mut added = false;
        let mut held: Vec<Held> = pins
            .held
            .iter()
            .filter(|held| held.kind == PinnedKind::Instructions)
            .cloned()
            .collect();
        let file = self.path(server);
        let mut vet_all = |items: &[Box<RawValue>], kind, fields| -> Vec<Box<RawValue>> {
            let mut offered = Vec::with_capacity(items.len());
            for item in items {
                let candidate = candidate(kind, item, fields);
                let trusted = FirstSight::of(kind, first_sight);
                match pins.decide(
                    server,
                    candidate,
                    file.as_deref(),
                    approve_new,
                    trusted,
                    &mut added,
                ) {
                    Verdict::Offered => offered.push(item.clone()),
                    Verdict::Held(one) => held.push(one),
                }
            }
            offered
        };
        let tools = vet_all(&catalog.tools, PinnedKind::Tool, TOOL_FIELDS);
        let prompts = vet_all(&catalog.prompts, PinnedKind::Prompt, PROMPT_FIELDS);
        let skills = vet_all(&catalog.skills, PinnedKind::Skill, SKILL_FIELDS);
        pins.first_sight.tools = false;
        pins.first_sight.prompts = false;
        pins.first_sight.skills = false;
        if added || pins.unsaved {
            pins.save(self.path(server));
        }
        let output = if tools.len() == catalog.tools.len()
            && prompts.len() == catalog.prompts.len()
            && skills.len() == catalog.skills.len()
        {
            catalog.clone()
        } else {
            Arc::new(Catalog {
                tools,
                prompts,
                skills,
                ..Catalog::clone(catalog)
            })
        };
        for one in &held {
            tracing::warn!(
                server,
                kind = one.kind.as_str(),
                name = %one.name,
                reason = one.reason.as_str(),
                "held back until it is approved on the dashboard"
            );
        }
        pins.held = held;
        pins.vetted = Some((catalog.clone(), output.clone()));
        self.publish(&servers);
        output
    }

    /// Vets the instructions `server` gives (its `initialize` or `server/discover`); whether
    /// they may be given to editors. Cheap when they are the ones vetted last.
    pub(crate) fn vet_instructions(&self, server: &str, instructions: &str) -> bool {
        let approve_new = self.inner.approve_new.load(Ordering::Relaxed);
        let mut servers = self.lock();
        let pins = self.server(&mut servers, server);
        if let Some((text, offered)) = &pins.instructions
            && text == instructions
        {
            return *offered;
        }
        let first_sight = pins.first_sight.instructions;
        pins.first_sight.instructions = false;
        let definition = serde_json::value::to_raw_value(&serde_json::json!({
            "instructions": instructions
        }))
        .expect("a string serializes");
        let candidate = Candidate {
            kind: PinnedKind::Instructions,
            name: "instructions".to_owned(),
            definition: Ok(Definition::new(definition)),
        };
        let mut added = false;
        let file = self.path(server);
        let verdict = pins.decide(
            server,
            candidate,
            file.as_deref(),
            approve_new,
            first_sight,
            &mut added,
        );
        if added || pins.unsaved {
            pins.save(self.path(server));
        }
        pins.held
            .retain(|held| held.kind != PinnedKind::Instructions);
        let offered = match verdict {
            Verdict::Offered => true,
            Verdict::Held(held) => {
                tracing::warn!(
                    server,
                    reason = held.reason.as_str(),
                    "instructions held back until approved"
                );
                pins.held.push(held);
                false
            }
        };
        pins.instructions = Some((instructions.to_owned(), offered));
        self.publish(&servers);
        offered
    }

    /// Approves the held things of `server` whose keys are in `keys` (all of them for `None`):
    /// their current definitions are pinned. A server whose pin file could not be read gets a
    /// new one with everything it offers now, whatever `keys` says. With `seen` (each one's
    /// `sha256` as the reviewer saw it, by key), one that changed since, or that the reviewer did
    /// not see, is refused and nothing is approved. Returns how many were approved.
    pub fn approve(
        &self,
        server: &str,
        keys: Option<&[String]>,
        seen: Option<&BTreeMap<String, String>>,
    ) -> Result<usize, ApproveError> {
        let mut servers = self.lock();
        let Some(pins) = servers.get_mut(server) else {
            return Err(ApproveError::NotHeld(format!(
                "nothing of {server} is held"
            )));
        };
        let unreadable = pins.pinned.is_err();
        let chosen: Vec<Held> = pins
            .held
            .iter()
            .filter(|held| unreadable || keys.is_none_or(|keys| keys.contains(&held.key)))
            .cloned()
            .collect();
        if chosen.is_empty() {
            return Err(ApproveError::NotHeld(match keys {
                Some(keys) => format!("nothing of {server} named {} is held", keys.join(", ")),
                None => format!("nothing of {server} is held"),
            }));
        }
        if let Some(seen) = seen {
            let unseen: Vec<&str> = chosen
                .iter()
                .filter(|held| seen.get(&held.key) != Some(&held.sha256))
                .map(|held| held.key.as_str())
                .collect();
            if !unseen.is_empty() {
                return Err(ApproveError::ChangedSince(format!(
                    "{} of {server} changed since it was shown; nothing was approved, look again",
                    unseen.join(", ")
                )));
            }
        }
        if pins.pinned.is_err() {
            // Everything offered now is trusted as the server's new first sight.
            pins.pinned = Ok(PinFile::current());
        }
        if let Ok(pinned) = &mut pins.pinned {
            for held in &chosen {
                pinned.insert(held.kind, held.name.clone(), Pin::of(held.current.clone()));
            }
        }
        pins.save(self.path(server));
        pins.vetted = None;
        pins.instructions = None;
        drop(servers);
        tracing::info!(server, approved = chosen.len(), "approved");
        self.inner.revised.send_replace(());
        Ok(chosen.len())
    }

    /// The SHA-256 of the pin under which `server` offers its `kind` named `name` now: `None` when
    /// it is held back, or not pinned.
    pub(crate) fn offered_pin(&self, server: &str, kind: PinnedKind, name: &str) -> Option<String> {
        let servers = self.lock();
        let pins = servers.get(server)?;
        if pins
            .held
            .iter()
            .any(|held| held.kind == kind && held.name == name)
        {
            return None;
        }
        let pinned = pins.pinned.as_ref().ok()?;
        pinned.get(kind, name).map(|pin| pin.sha256.clone())
    }

    /// What is held now, and the pin files' problems.
    pub fn report(&self) -> Arc<PinReport> {
        self.inner.report.borrow().clone()
    }

    /// Follows [`Pins::report`].
    pub fn watch_report(&self) -> watch::Receiver<Arc<PinReport>> {
        self.inner.report.subscribe()
    }

    /// Told when the catalogs must be vetted again.
    pub(super) fn revisions(&self) -> watch::Receiver<()> {
        self.inner.revised.subscribe()
    }

    /// Forgets what is held of servers that are gone (their pin files stay).
    pub(super) fn retain_servers(&self, present: &dyn Fn(&str) -> bool) {
        let mut servers = self.lock();
        let before = servers.len();
        servers.retain(|name, _| present(name));
        if servers.len() != before {
            self.publish(&servers);
        }
    }

    fn server<'a>(
        &self,
        servers: &'a mut HashMap<String, ServerPins>,
        server: &str,
    ) -> &'a mut ServerPins {
        servers
            .entry(server.to_owned())
            .or_insert_with(|| ServerPins::load(self.path(server)))
    }

    fn publish(&self, servers: &HashMap<String, ServerPins>) {
        let mut report = PinReport::default();
        let mut names: Vec<&String> = servers.keys().collect();
        names.sort();
        for name in names {
            let pins = &servers[name];
            // The instructions first (they bear on every call), then tools, then prompts.
            let mut held = pins.held.clone();
            held.sort_by_key(|held| {
                let rank = match held.kind {
                    PinnedKind::Instructions => 0,
                    PinnedKind::Tool => 1,
                    PinnedKind::Prompt => 2,
                    PinnedKind::Skill => 3,
                };
                (rank, held.name.clone())
            });
            report.held.extend(held);
            let problem = match &pins.pinned {
                Err(problem) => Some(problem),
                Ok(_) => pins.save_error.as_ref(),
            };
            if let Some(problem) = problem {
                report.problems.insert(name.clone(), problem.to_string());
            }
        }
        self.inner.report.send_if_modified(|current| {
            if **current == report {
                return false;
            }
            *current = Arc::new(report);
            true
        });
    }

    fn path(&self, server: &str) -> Option<PathBuf> {
        Some(self.inner.dir.as_ref()?.join(format!("{server}.json")))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ServerPins>> {
        self.inner
            .servers
            .lock()
            .expect("the pins lock is never poisoned")
    }
}

impl ServerPins {
    /// The pins in `path`: none yet when there is no file; unreadable when it cannot be read or
    /// is not a pin file.
    fn load(path: Option<PathBuf>) -> ServerPins {
        let (pinned, exists) = match path {
            None => (Ok(PinFile::current()), false),
            Some(path) => match std::fs::read(&path) {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    (Ok(PinFile::current()), false)
                }
                Err(error) => (Err(PinFileError::Read { path, error }), true),
                Ok(bytes) => (
                    serde_json::from_slice::<PinFile>(&bytes)
                        .map(|mut file| {
                            file.forget_definitions();
                            file
                        })
                        .map_err(|error| PinFileError::Invalid { path, error }),
                    true,
                ),
            },
        };
        // A file that is there, even empty, means the server was seen: what it offers later is
        // new. A file of an earlier version never pinned prompts or instructions.
        let (first_sight, unsaved) = match &pinned {
            Err(_) => (FirstSight::default(), false),
            Ok(_) if !exists => (
                FirstSight {
                    tools: true,
                    prompts: true,
                    instructions: true,
                    skills: true,
                },
                true,
            ),
            Ok(file) if file.version < PIN_FILE_VERSION => (
                FirstSight {
                    tools: file.tools.is_empty(),
                    prompts: file.version < 2,
                    instructions: file.version < 2,
                    skills: true,
                },
                true,
            ),
            Ok(_) => (FirstSight::default(), false),
        };
        ServerPins {
            pinned,
            first_sight,
            unsaved,
            vetted: None,
            instructions: None,
            held: Vec::new(),
            save_error: None,
        }
    }

    /// Offers `candidate`, pinning it if it is new and trusted at first sight, or holds it.
    fn decide(
        &mut self,
        server: &str,
        candidate: Candidate,
        file: Option<&Path>,
        approve_new: bool,
        first_sight: bool,
        added: &mut bool,
    ) -> Verdict {
        let Candidate {
            kind,
            name,
            definition,
        } = candidate;
        let held = |reason, detail, pinned: Option<&Pin>, current: Definition| {
            Verdict::Held(Held {
                server: server.to_owned(),
                kind,
                key: key(kind, &name),
                name: name.clone(),
                reason,
                detail,
                pinned: pinned.and_then(|pin| {
                    pin.definition.clone().or_else(|| {
                        let saved = PinFile::read(file?)?;
                        let kept = saved
                            .get(kind, &name)
                            .filter(|kept| kept.sha256 == pin.sha256);
                        kept?.definition.clone()
                    })
                }),
                sha256: current.sha256(),
                current,
            })
        };
        let definition = match definition {
            Ok(definition) => definition,
            Err((why, sent)) => return held(HeldReason::Unchecked, Some(why), None, sent),
        };
        let pinned = match &mut self.pinned {
            Err(_) => return held(HeldReason::Unreadable, None, None, definition),
            Ok(pinned) => pinned,
        };
        match pinned.get(kind, &name) {
            Some(pin) if pin.sha256 == definition.sha256() => Verdict::Offered,
            Some(pin) => held(HeldReason::Changed, None, Some(pin), definition),
            None if approve_new || !first_sight => held(HeldReason::New, None, None, definition),
            None => {
                pinned.insert(kind, name.clone(), Pin::of(definition));
                *added = true;
                Verdict::Offered
            }
        }
    }

    fn save(&mut self, path: Option<PathBuf>) {
        let (Some(path), Ok(pinned)) = (path, &mut self.pinned) else {
            return;
        };
        pinned.version = PIN_FILE_VERSION;
        self.unsaved = false;
        if let Some(saved) = PinFile::read(&path) {
            pinned.recall_definitions(&saved);
        }
        let text = serde_json::to_vec_pretty(pinned).expect("pins serialize");
        let written = platform::atomic::write_private(&path, &text);
        if written.is_ok() {
            pinned.forget_definitions();
        }
        self.save_error = written.err().map(|error| {
            tracing::warn!(%error, path = %path.display(), "cannot save the pins");
            PinFileError::Save { path, error }
        });
    }
}

/// What an approval names a held thing by.
fn key(kind: PinnedKind, name: &str) -> String {
    match kind {
        PinnedKind::Tool => name.to_owned(),
        PinnedKind::Prompt => format!("prompt:{name}"),
        PinnedKind::Instructions => "instructions".to_owned(),
        PinnedKind::Skill => format!("skill:{name}"),
    }
}

/// A tool or prompt as offered: its name and the canonical form of its pinned `fields`, from
/// the bytes editors receive. One that cannot be checked (no name that is a string, a
/// definition nested too deep) keeps what was sent, and why it cannot be checked.
fn candidate(kind: PinnedKind, item: &RawValue, fields: &[&str]) -> Candidate {
    let unchecked = |why: String| Candidate {
        kind,
        name: String::new(),
        definition: Err((why, Definition(item.get().into()))),
    };
    let Ok(entries) = ObjectEntries::parse(item.get()) else {
        return unchecked("it is not a JSON object whose keys can be read".to_owned());
    };
    // A skill is known by its URI; tools and prompts by their names.
    let name_field = match kind {
        PinnedKind::Skill => "uri",
        _ => "name",
    };
    let Some(name) = entries.get_str(name_field) else {
        return unchecked(format!("its {name_field} is not a string"));
    };
    if kind == PinnedKind::Skill {
        let vouched = skills::Entry::read(item.get())
            .map_err(|_| Unvouched::NotASkill)
            .and_then(|entry| skills::vouches_for_its_files(&entry));
        if let Err(why) = vouched {
            return Candidate {
                kind,
                name: name.into_owned(),
                definition: Err((why.to_string(), Definition(item.get().into()))),
            };
        }
    }
    let mut part = String::from("{");
    for field in fields {
        let Some(value) = entries.get(field) else {
            continue;
        };
        match canonical::canonical(value) {
            Ok(text) => {
                if part.len() > 1 {
                    part.push(',');
                }
                part.push_str(&serde_json::to_string(field).expect("a field name serializes"));
                part.push(':');
                part.push_str(&text);
            }
            Err(canonical::Unchecked(why)) => {
                return Candidate {
                    kind,
                    name: name.into_owned(),
                    definition: Err((
                        format!("its {field} cannot be checked: {why}"),
                        Definition(item.get().into()),
                    )),
                };
            }
        }
    }
    part.push('}');
    Candidate {
        kind,
        name: name.into_owned(),
        definition: Ok(Definition(part.into())),
    }
}

#[cfg(test)]
mod tests;
