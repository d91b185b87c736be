//! The activity log's database: an embedded SQLite file (`rusqlite`, its own SQLite built in),
//! 0600 in the data directory. Writes come in batches from the log's writer thread only;
//! queries open their own read connection (WAL lets both run at once).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params_from_iter};
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::{Entry, Outcome, Record};

/// How long a statement waits for a lock held by another connection.
const BUSY_TIMEOUT: Duration = Duration::from_secs(1);

/// The most names the writer remembers the numbers of; past it, it starts over. A person's
/// servers, tools and editors come to a few hundred; more are names a client made up (any client
/// may call a million tools that do not exist), which must not grow the writer's memory.
const NAMES_REMEMBERED: usize = 4096;

/// Past this many names, retention also removes the names no record uses any more (which takes
/// a pass over the records, so it is not done for the few hundred of everyday use).
const NAMES_KEPT_WITHOUT_SWEEP: i64 = 10_000;

/// The longest name kept whole (tool names are at most 128 characters by the spec; editors'
/// names are shorter); a longer one is cut, with `…`, at a character boundary.
const MAX_NAME_BYTES: usize = 512;

/// Names (servers, tools, editors, methods, profiles, URIs) are kept once in `names` and
/// referred to by number, which keeps rows small and inserts cheap. The one index is by time,
/// and always grows at its end; it also holds what the per-tool figures read, so that they
/// never touch the rows (whose payloads may be large). Other filters read the rows newest
/// first and stop at a page (see `Reader::page`): under 100 ms over a million records even
/// when nothing matches.
const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS names (
        id INTEGER PRIMARY KEY,
        text TEXT NOT NULL UNIQUE
    );
    CREATE TABLE IF NOT EXISTS calls (
        id INTEGER PRIMARY KEY,
        at_ms INTEGER NOT NULL,
        duration_us INTEGER NOT NULL,
        session TEXT,
        client INTEGER,
        profile INTEGER NOT NULL,
        server INTEGER,
        method INTEGER NOT NULL,
        name INTEGER,
        original INTEGER,
        outcome INTEGER NOT NULL,
        error_code INTEGER,
        error TEXT,
        request_bytes INTEGER NOT NULL,
        response_bytes INTEGER NOT NULL,
        arguments TEXT,
        result TEXT,
        decision TEXT
    );
    CREATE INDEX IF NOT EXISTS calls_at ON calls (at_ms, server, name, duration_us, outcome);

";

/// Gives a log written before calls had a `decision` that column (SQLite adds it in place).
fn add_decision_column(connection: &Connection) -> rusqlite::Result<()> {
    let has = connection
        .prepare("SELECT 1 FROM pragma_table_info('calls') WHERE name = 'decision'")?
        .exists([])?;
    if !has {
        connection.execute_batch("ALTER TABLE calls ADD COLUMN decision TEXT")?;
    }
    Ok(())
}

/// Why the database could not be used.
#[derive(Debug, thiserror::Error)]
#[error("the activity log at {path}: {source}")]
pub(crate) struct StoreError {
    path: PathBuf,
    #[source]
    source: rusqlite::Error,
}

/// The writer's connection.
pub(super) struct Store {
    path: PathBuf,
    connection: Connection,
    /// The numbers of the names written so far (hashed the quick way: they are few and short,
    /// and read for every record).
    names: FxHashMap<String, i64>,
}

impl Store {
    /// Opens (or makes) the database at `path`. A file SQLite cannot read is set aside as
    /// `<name>.unreadable-<seconds>` and a new one started; the returned text says so.
    pub(super) fn open(path: &Path) -> Result<(Store, Option<String>), StoreError> {
        match Store::try_open(path) {
            Ok(store) => Ok((store, None)),
            // Busy, locked, unwritable: the file may be fine, and is tried again later.
            Err(error) if !is_unreadable(&error.source) => Err(error),
            Err(first) => {
                let aside = path.with_file_name(format!(
                    "{}.unreadable-{}",
                    path.file_name().unwrap_or_default().to_string_lossy(),
                    platform::clock::unix_millis(std::time::SystemTime::now()) / 1000
                ));
                for suffix in ["", "-wal", "-shm"] {
                    let from = PathBuf::from(format!("{}{suffix}", path.display()));
                    let to = PathBuf::from(format!("{}{suffix}", aside.display()));
                    let _ = std::fs::rename(from, to);
                }
                let store = Store::try_open(path)?;
                Ok((
                    store,
                    Some(format!(
                        "the activity log could not be read ({}); it was set aside as {} and a \
                         new one started",
                        first.source,
                        aside.display()
                    )),
                ))
            }
        }
    }

    fn try_open(path: &Path) -> Result<Store, StoreError> {
        let error = |source| StoreError {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            let _ = platform::dirs::create_private_dir(dir);
        }
        // The file is made 0600 before SQLite opens it, so it is never readable by others.
        if !path.exists() {
            let _ = platform::atomic::write_private(path, b"");
        }
        let connection = Connection::open(path).map_err(error)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(error)?;
        // Freed pages go back to the file system when asked (`incremental_vacuum`), so the size
        // limit holds without rewriting the whole file. Only a new file takes it, and only
        // before anything else is written.
        connection
            .pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .map_err(error)?;
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(error)?;
        connection
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(error)?;
        // A file that is not a database fails here, at its first real read.
        connection.execute_batch(SCHEMA).map_err(error)?;
        add_decision_column(&connection).map_err(error)?;
        Ok(Store {
            path: path.to_path_buf(),
            connection,
            names: FxHashMap::default(),
        })
    }

    /// Writes `records` in one transaction.
    pub(super) fn insert(&mut self, records: &[Entry<'_>]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let error = move |source| StoreError {
            path: path.clone(),
            source,
        };
        let transaction = self.connection.transaction().map_err(&error)?;
        let written = (|| {
            let mut statement = transaction.prepare_cached(
                "INSERT INTO calls (at_ms, duration_us, session, client, profile, server, \
                 method, name, original, outcome, error_code, error, request_bytes, \
                 response_bytes, arguments, result, decision) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            )?;
            let mut names = Names {
                known: &mut self.names,
                connection: &transaction,
            };
            for entry in records {
                let record = &entry.view;
                statement.execute(rusqlite::params![
                    record.at_ms as i64,
                    record.duration_us as i64,
                    record.session,
                    names.number_of(entry.client.as_deref())?,
                    names.number_of(Some(record.profile))?,
                    names.number_of(record.server)?,
                    names.number_of(Some(record.method))?,
                    names.number_of(entry.name.as_deref())?,
                    names.number_of(record.original)?,
                    record.outcome.code(),
                    record.error_code,
                    entry.error.as_deref(),
                    record.request_bytes as i64,
                    record.response_bytes as i64,
                    entry.arguments.as_deref(),
                    entry.result.as_deref(),
                    record.decision,
                ])?;
            }
            Ok(())
        })();
        match written.and_then(|()| transaction.commit()) {
            Ok(()) => Ok(()),
            Err(source) => {
                // Names added by the lost transaction are gone with it.
                self.names.clear();
                Err(error(source))
            }
        }
    }

    /// Removes records older than `before_ms`, then the oldest tenth at a time until the file
    /// is under `max_bytes`; how many went.
    pub(super) fn retain(&mut self, before_ms: u64, max_bytes: u64) -> Result<usize, StoreError> {
        let path = self.path.clone();
        let error = |source| StoreError {
            path: path.clone(),
            source,
        };
        let mut removed = self
            .connection
            .execute("DELETE FROM calls WHERE at_ms < ?1", [before_ms as i64])
            .map_err(error)?;
        let names: i64 = self
            .connection
            .query_row("SELECT COUNT(*) FROM names", [], |row| row.get(0))
            .map_err(error)?;
        let mut sweep = names > NAMES_KEPT_WITHOUT_SWEEP;
        loop {
            if sweep {
                self.sweep_names().map_err(error)?;
            }
            self.shrink().map_err(error)?;
            if self.size_bytes().map_err(error)? <= max_bytes {
                break;
            }
            let batch = self
                .connection
                .execute(
                    "DELETE FROM calls WHERE id IN (SELECT id FROM calls ORDER BY id LIMIT \
                     (SELECT MAX(1, COUNT(*) / 10) FROM calls))",
                    [],
                )
                .map_err(error)?;
            if batch == 0 {
                break;
            }
            removed += batch;
            // The names of the records that went may be what fills the file.
            sweep = true;
        }
        Ok(removed)
    }

    /// Removes the names no record uses, in one pass over the records.
    fn sweep_names(&mut self) -> rusqlite::Result<()> {
        self.connection.execute_batch(
            "CREATE TEMP TABLE used (id INTEGER PRIMARY KEY);
             INSERT OR IGNORE INTO used SELECT client FROM calls WHERE client IS NOT NULL;
             INSERT OR IGNORE INTO used SELECT profile FROM calls;
             INSERT OR IGNORE INTO used SELECT server FROM calls WHERE server IS NOT NULL;
             INSERT OR IGNORE INTO used SELECT method FROM calls;
             INSERT OR IGNORE INTO used SELECT name FROM calls WHERE name IS NOT NULL;
             INSERT OR IGNORE INTO used SELECT original FROM calls WHERE original IS NOT NULL;
             DELETE FROM names WHERE id NOT IN (SELECT id FROM used);
             DROP TABLE used;",
        )?;
        // Numbers of removed names may be given again to other names.
        self.names.clear();
        Ok(())
    }

    /// Gives the file's free pages back, so that it shrinks.
    fn shrink(&self) -> rusqlite::Result<()> {
        let mut vacuum = self.connection.prepare("PRAGMA incremental_vacuum")?;
        let mut steps = vacuum.query([])?;
        while steps.next()?.is_some() {}
        self.connection
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
    }

    /// The database's size: its pages, as this connection sees them.
    pub(super) fn size_bytes(&self) -> rusqlite::Result<u64> {
        let pages: i64 = self
            .connection
            .query_row("PRAGMA page_count", [], |row| row.get(0))?;
        let page_size: i64 = self
            .connection
            .query_row("PRAGMA page_size", [], |row| row.get(0))?;
        Ok((pages * page_size) as u64)
    }
}

/// Which records a query wants; every field narrows it.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub since_ms: Option<u64>,
    pub until_ms: Option<u64>,
    pub server: Option<String>,
    /// The name the editor used: a tool's or prompt's exposed name, or a resource's URI.
    pub tool: Option<String>,
    /// The editor's name (`clientInfo.name`).
    pub client: Option<String>,
    pub outcome: Option<Outcome>,
}

/// One record as the API shows it: its number in the log, then the record as it was taken
/// (its fields beside the number, not under a key of their own).
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub id: i64,
    #[serde(flatten)]
    pub record: Record<&'static str>,
}

/// Call counts and latencies of one tool (or other name) over a window.
#[derive(Debug, Clone, Serialize)]
pub struct ToolStats {
    pub(crate) server: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    pub(crate) p50_us: u64,
    pub(crate) p99_us: u64,
}

/// The writer's view of the `names` table: each text's number, added when new.
struct Names<'a> {
    known: &'a mut FxHashMap<String, i64>,
    connection: &'a Connection,
}

impl Names<'_> {
    fn number_of(&mut self, text: Option<&str>) -> rusqlite::Result<Option<i64>> {
        let Some(text) = text else { return Ok(None) };
        if let Some(number) = self.known.get(text) {
            return Ok(Some(*number));
        }
        let text = &*cut_name(text);
        if self.known.len() >= NAMES_REMEMBERED {
            self.known.clear();
        }
        self.connection
            .prepare_cached("INSERT OR IGNORE INTO names (text) VALUES (?1)")?
            .execute([text])?;
        let number: i64 = self
            .connection
            .prepare_cached("SELECT id FROM names WHERE text = ?1")?
            .query_row([text], |row| row.get(0))?;
        self.known.insert(text.to_owned(), number);
        Ok(Some(number))
    }
}

/// `text`, cut to [`MAX_NAME_BYTES`] with `…` if it is longer.
fn cut_name(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_NAME_BYTES {
        return text.into();
    }
    let mut end = MAX_NAME_BYTES - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end]).into()
}

/// A read connection to the database, for queries.
pub struct Reader {
    connection: Connection,
}

/// The columns of a [`Row`], names as text.
const ROW_COLUMNS: &str = "calls.id, at_ms, duration_us, session, \
    (SELECT text FROM names WHERE id = client), (SELECT text FROM names WHERE id = profile), \
    (SELECT text FROM names WHERE id = server), (SELECT text FROM names WHERE id = method), \
    (SELECT text FROM names WHERE id = name), (SELECT text FROM names WHERE id = original), \
    outcome, error_code, error, request_bytes, response_bytes, arguments, result, decision";

impl Reader {
    /// A reader of the database at `path`; `None` while the writer has not made it yet (it
    /// opens at a low priority, so a query can come first): a log with nothing in it.
    pub fn open(path: &Path) -> rusqlite::Result<Option<Reader>> {
        if !path.exists() {
            return Ok(None);
        }
        let connection = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.busy_timeout(BUSY_TIMEOUT)?;
        let made = connection
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'calls'",
                [],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
        Ok(made.then_some(Reader { connection }))
    }

    /// The numbers of the names `filter` gives; `None` if one of them is in no record.
    fn numbers(&self, filter: &Filter) -> rusqlite::Result<Option<Numbers>> {
        let mut statement = self
            .connection
            .prepare_cached("SELECT id FROM names WHERE text = ?1")?;
        let mut number_of = |text: &Option<String>| -> rusqlite::Result<Option<Option<i64>>> {
            match text {
                None => Ok(Some(None)),
                Some(text) => statement
                    .query_row([text], |row| row.get(0))
                    .optional()
                    .map(|number| number.map(Some)),
            }
        };
        let (Some(server), Some(name), Some(client)) = (
            number_of(&filter.server)?,
            number_of(&filter.tool)?,
            number_of(&filter.client)?,
        ) else {
            return Ok(None);
        };
        Ok(Some(Numbers {
            server,
            name,
            client,
        }))
    }

    /// The newest records matching `filter` with an id below `before_id`, at most `limit`.
    pub fn page(
        &self,
        filter: &Filter,
        before_id: Option<i64>,
        limit: usize,
    ) -> rusqlite::Result<Vec<Row>> {
        let Some(numbers) = self.numbers(filter)? else {
            return Ok(Vec::new());
        };
        let (mut clauses, mut values) = where_clauses(filter, &numbers);
        if let Some(before) = before_id {
            clauses.push("calls.id < ?");
            values.push(before);
        }
        values.push(limit as i64);
        let sql = format!(
            "SELECT {ROW_COLUMNS} FROM calls {} ORDER BY calls.id DESC LIMIT ?",
            where_sql(&clauses)
        );
        let mut statement = self.connection.prepare_cached(&sql)?;
        let rows = statement.query_map(params_from_iter(values), |row| {
            Ok(Row {
                id: row.get(0)?,
                record: Record {
                    at_ms: row.get::<_, i64>(1)? as u64,
                    duration_us: row.get::<_, i64>(2)? as u64,
                    session: row.get(3)?,
                    client: row.get(4)?,
                    profile: row.get::<_, Option<Arc<str>>>(5)?.unwrap_or_default(),
                    server: row.get(6)?,
                    method: row.get::<_, Option<String>>(7)?.unwrap_or_default().into(),
                    name: row.get(8)?,
                    original: row.get(9)?,
                    outcome: Outcome::from_code(row.get(10)?).map_or("unknown", Outcome::as_str),
                    error_code: row.get(11)?,
                    error: row.get(12)?,
                    request_bytes: row.get::<_, i64>(13)? as u64,
                    response_bytes: row.get::<_, i64>(14)? as u64,
                    arguments: row.get(15)?,
                    result: row.get(16)?,
                    decision: row.get(17)?,
                },
            })
        })?;
        rows.collect()
    }

    /// For each server and name in the window: calls, errors, and the median and 99th
    /// percentile of their durations.
    pub fn stats(&self, filter: &Filter) -> rusqlite::Result<Vec<ToolStats>> {
        let Some(numbers) = self.numbers(filter)? else {
            return Ok(Vec::new());
        };
        let (clauses, values) = where_clauses(filter, &numbers);
        let sql = format!(
            "SELECT server, name, duration_us, outcome FROM calls {}",
            where_sql(&clauses)
        );
        let mut statement = self.connection.prepare_cached(&sql)?;
        let mut rows = statement.query(params_from_iter(values))?;
        let mut tools: HashMap<ToolKey, Tally> = HashMap::new();
        while let Some(row) = rows.next()? {
            let key = (
                row.get_ref(0)?.as_i64_or_null()?,
                row.get_ref(1)?.as_i64_or_null()?,
            );
            let duration = row.get_ref(2)?.as_i64()?.clamp(0, i64::from(u32::MAX)) as u32;
            let failed =
                Outcome::from_code(row.get_ref(3)?.as_i64()?).is_some_and(Outcome::is_failure);
            let tally = tools.entry(key).or_default();
            tally.errors += u64::from(failed);
            tally.durations.push(duration);
        }
        let mut text = self
            .connection
            .prepare_cached("SELECT text FROM names WHERE id = ?1")?;
        let mut name_of = |number: Option<i64>| -> rusqlite::Result<Option<String>> {
            number
                .map(|number| text.query_row([number], |row| row.get(0)))
                .transpose()
        };
        let mut stats = Vec::with_capacity(tools.len());
        for (
            (server, name),
            Tally {
                errors,
                mut durations,
            },
        ) in tools
        {
            durations.sort_unstable();
            let at =
                |p: f64| u64::from(durations[((durations.len() - 1) as f64 * p).round() as usize]);
            stats.push(ToolStats {
                server: name_of(server)?,
                name: name_of(name)?,
                calls: durations.len() as u64,
                errors,
                p50_us: at(0.5),
                p99_us: at(0.99),
            });
        }
        stats.sort_by(|a, b| (&a.server, &a.name).cmp(&(&b.server, &b.name)));
        Ok(stats)
    }
}

/// A server and a name, as numbers in the `names` table.
type ToolKey = (Option<i64>, Option<i64>);

/// One tool's failures and durations in a window.
#[derive(Default)]
struct Tally {
    errors: u64,
    durations: Vec<u32>,
}

/// Whether SQLite says the file is not a database it can read (as opposed to busy or
/// unwritable).
fn is_unreadable(error: &rusqlite::Error) -> bool {
    matches!(
        error,
        rusqlite::Error::SqliteFailure(failure, _)
            if matches!(
                failure.code,
                rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt
            )
    )
}

/// The numbers of the names a filter gives.
#[derive(Default)]
struct Numbers {
    server: Option<i64>,
    name: Option<i64>,
    client: Option<i64>,
}

/// The conditions of `filter`, its names as `numbers`.
fn where_clauses(filter: &Filter, numbers: &Numbers) -> (Vec<&'static str>, Vec<i64>) {
    let mut clauses = Vec::new();
    let mut values = Vec::new();
    let conditions = [
        ("at_ms >= ?", filter.since_ms.map(|since| since as i64)),
        ("at_ms < ?", filter.until_ms.map(|until| until as i64)),
        ("server = ?", numbers.server),
        ("name = ?", numbers.name),
        ("client = ?", numbers.client),
        ("outcome = ?", filter.outcome.map(Outcome::code)),
    ];
    for (clause, value) in conditions {
        if let Some(value) = value {
            clauses.push(clause);
            values.push(value);
        }
    }
    (clauses, values)
}

fn where_sql(clauses: &[&str]) -> String {
    match clauses.is_empty() {
        true => String::new(),
        false => format!("WHERE {}", clauses.join(" AND ")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::queue::View;
    use super::*;

    fn entry<'a>(at_ms: u64, client: &'a str, name: &'a str) -> Entry<'a> {
        Entry {
            view: View {
                at_ms,
                duration_us: 10,
                session: None,
                client: Some(client),
                profile: "default",
                server: None,
                method: "tools/call",
                name: Some(name),
                original: None,
                outcome: Outcome::Error,
                error_code: Some(-32602),
                error: None,
                request_bytes: 80,
                response_bytes: 90,
                arguments: None,
                result: None,
                decision: None,
            },
            client: Some(client.into()),
            name: Some(name.into()),
            arguments: None,
            result: None,
            error: Some("unknown tool".into()),
        }
    }

    #[test]
    fn a_log_the_writer_has_not_made_yet_reads_as_empty() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("activity.db");
        assert!(Reader::open(&path).expect("no file").is_none());
        // What the writer leaves before SQLite has written a page.
        platform::atomic::write_private(&path, b"").expect("an empty file");
        assert!(Reader::open(&path).expect("an empty file").is_none());
        let (mut store, _) = Store::open(&path).expect("opened");
        store
            .insert(&[entry(1, "editor", "demo__add")])
            .expect("inserted");
        let reader = Reader::open(&path).expect("opened").expect("made");
        let page = reader.page(&Filter::default(), None, 10).expect("a page");
        assert_eq!(page.len(), 1);
        assert_eq!(page[0].record.name.as_deref(), Some("demo__add"));
    }

    #[test]
    fn a_log_from_before_decisions_were_kept_gains_the_column_and_keeps_its_records() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("activity.db");
        let before = SCHEMA.replace("result TEXT,\n        decision TEXT", "result TEXT");
        assert_ne!(before, SCHEMA);
        let old = Connection::open(&path).expect("an old log");
        old.execute_batch(&before).expect("the old schema");
        old.execute_batch(
            "INSERT INTO names (id, text) VALUES (1, 'default'), (2, 'tools/call');
             INSERT INTO calls (at_ms, duration_us, profile, method, outcome, request_bytes,
                 response_bytes) VALUES (1, 1, 1, 2, 0, 1, 1);",
        )
        .expect("an old record");
        drop(old);
        let (mut store, _) = Store::open(&path).expect("opened");
        let mut decided = entry(2, "editor", "git__push");
        decided.view.decision = Some("allowed by the dashboard after 1.0 s");
        store.insert(&[decided]).expect("inserted");
        let reader = Reader::open(&path).expect("opened").expect("made");
        let page = reader.page(&Filter::default(), None, 10).expect("a page");
        assert_eq!(page.len(), 2);
        assert_eq!(
            page[0].record.decision.as_deref(),
            Some("allowed by the dashboard after 1.0 s")
        );
        assert_eq!(page[1].record.decision, None, "the old record");
    }

    fn count(store: &Store, table: &str) -> i64 {
        store
            .connection
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |row| {
                row.get(0)
            })
            .expect("a count")
    }

    #[test]
    fn made_up_names_neither_grow_memory_nor_crowd_out_the_log() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mut store, _) = Store::open(&dir.path().join("activity.db")).expect("opened");
        // The person's own calls first, then a client's flood of tools that do not exist.
        let own: Vec<Entry<'_>> = (0..100)
            .map(|at| entry(at, "editor", "demo__add"))
            .collect();
        store.insert(&own).expect("inserted");
        let names: Vec<String> = (0..200_000)
            .map(|n| format!("made_up_tool_{n:07}"))
            .collect();
        for chunk in names.chunks(10_000) {
            let flood: Vec<Entry<'_>> = chunk
                .iter()
                .map(|name| entry(1_000, "flooder", name))
                .collect();
            store.insert(&flood).expect("inserted");
            assert!(
                store.names.len() <= NAMES_REMEMBERED,
                "{}",
                store.names.len()
            );
        }
        assert!(count(&store, "names") > 200_000);

        // The size limit trims the oldest records and the names they took with them.
        let limit = store.size_bytes().expect("a size") / 4;
        store.retain(0, limit).expect("retained");
        assert!(store.size_bytes().expect("a size") <= limit);
        let calls = count(&store, "calls");
        assert!(calls > 10_000, "the newest records stay: {calls}");
        let used: i64 = store
            .connection
            .query_row(
                "SELECT COUNT(*) FROM (SELECT client FROM calls UNION SELECT profile FROM calls \
                 UNION SELECT method FROM calls UNION SELECT name FROM calls)",
                [],
                |row| row.get(0),
            )
            .expect("a count");
        assert_eq!(count(&store, "names"), used, "only names in use are kept");

        // A name far longer than any tool's is kept cut, once.
        let long = "x".repeat(100_000);
        store
            .insert(&[entry(2_000, "editor", &long)])
            .expect("inserted");
        let kept: String = store
            .connection
            .query_row("SELECT text FROM names WHERE text LIKE 'xxx%'", [], |row| {
                row.get(0)
            })
            .expect("the name");
        assert_eq!(kept.len(), MAX_NAME_BYTES);
        assert!(kept.ends_with('…'));
    }
}
