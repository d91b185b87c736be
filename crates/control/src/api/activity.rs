//! `/api/activity`: the activity log, newest first, filtered and paged; per-tool figures over a
//! window; the same records exported as JSON Lines or CSV; and `activity` events on
//! `/api/events` as records are taken.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde::Serialize;

use super::{ApiError, ApiState, json_ok};
use activity::store::{Filter, Reader, Row, ToolStats};
use activity::{ActivityLog, LogHealth, Outcome};

/// The most records one page holds.
const MAX_PAGE: usize = 1000;
const DEFAULT_PAGE: usize = 100;
/// Records read at a time for an export.
const EXPORT_CHUNK: usize = 1000;

type Params = HashMap<String, String>;

#[derive(Serialize)]
struct Page {
    records: Vec<Row>,
    /// The `before` of the next page, if there may be one.
    next_before: Option<i64>,
    health: LogHealth,
}

/// `GET /api/activity?since=&until=&server=&tool=&client=&outcome=&before=&limit=`.
pub(super) async fn list(
    State(api): State<ApiState>,
    params: Result<Query<Params>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(params) = params.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let log = log_of(&api)?;
    let filter = filter(&params, &["before", "limit"])?;
    let before = number(&params, "before")?.map(|before| before as i64);
    let limit = number(&params, "limit")?.map_or(Ok(DEFAULT_PAGE), |limit| {
        let limit = limit as usize;
        match (1..=MAX_PAGE).contains(&limit) {
            true => Ok(limit),
            false => Err(ApiError::BadRequest(format!(
                "limit must be 1 to {MAX_PAGE}, not {limit}"
            ))),
        }
    })?;
    // Read before the records, so that every record the health counts is in the page.
    let health = log.health();
    let path = log.path().to_path_buf();
    let records = blocking(move || match Reader::open(&path)? {
        Some(reader) => reader.page(&filter, before, limit),
        None => Ok(Vec::new()),
    })
    .await?;
    let next_before = (records.len() == limit)
        .then(|| records.last().map(|row| row.id))
        .flatten();
    Ok(json_ok(&Page {
        records,
        next_before,
        health,
    }))
}

/// `GET /api/activity/stats?since=&until=&server=&tool=&client=`: per server and name.
pub(super) async fn stats(
    State(api): State<ApiState>,
    params: Result<Query<Params>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(params) = params.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let log = log_of(&api)?;
    let filter = filter(&params, &[])?;
    let path = log.path().to_path_buf();
    let tools = blocking(move || match Reader::open(&path)? {
        Some(reader) => reader.stats(&filter),
        None => Ok(Vec::new()),
    })
    .await?;
    #[derive(Serialize)]
    struct Stats {
        tools: Vec<ToolStats>,
    }
    Ok(json_ok(&Stats { tools }))
}

/// `GET /api/activity/export?format=jsonl|csv&…` (the filters of the list), newest first.
pub(super) async fn export(
    State(api): State<ApiState>,
    params: Result<Query<Params>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(params) = params.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let log = log_of(&api)?;
    let filter = filter(&params, &["format"])?;
    let format = params.get("format").map(String::as_str).unwrap_or("jsonl");
    let (csv, content_type, extension) = match format {
        "jsonl" => (false, "application/x-ndjson", "jsonl"),
        "csv" => (true, "text/csv; charset=utf-8", "csv"),
        other => {
            return Err(ApiError::BadRequest(format!(
                "format must be jsonl or csv, not {other:?}"
            )));
        }
    };
    let path = log.path().to_path_buf();
    let (chunks, receiver) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(4);
    // Read page by page on a thread of its own; the body is sent as it is read.
    tokio::task::spawn_blocking(move || {
        if csv {
            let _ = chunks.blocking_send(Ok(csv_header()));
        }
        let reader = match Reader::open(&path) {
            Ok(Some(reader)) => reader,
            // Nothing written yet: the header alone.
            Ok(None) => return,
            Err(error) => {
                let _ = chunks.blocking_send(Err(std::io::Error::other(error.to_string())));
                return;
            }
        };
        let mut before = None;
        loop {
            let rows = match reader.page(&filter, before, EXPORT_CHUNK) {
                Ok(rows) => rows,
                Err(error) => {
                    let _ = chunks.blocking_send(Err(std::io::Error::other(error.to_string())));
                    return;
                }
            };
            let Some(last) = rows.last() else { return };
            before = Some(last.id);
            let text: String = rows
                .iter()
                .map(|row| match csv {
                    true => csv_line(row),
                    false => serde_json::to_string(row).expect("a row serializes") + "\n",
                })
                .collect();
            if chunks.blocking_send(Ok(text)).is_err() || rows.len() < EXPORT_CHUNK {
                return;
            }
        }
    });
    let stream = ChannelStream { receiver };
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&format!(
            "attachment; filename=\"switchboard-activity.{extension}\""
        ))
        .expect("a plain header"),
    );
    Ok(response)
}

/// The chunks a channel delivers, as a stream.
struct ChannelStream {
    receiver: tokio::sync::mpsc::Receiver<Result<String, std::io::Error>>,
}

impl futures_core::Stream for ChannelStream {
    type Item = Result<String, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.receiver.poll_recv(context)
    }
}

const CSV_COLUMNS: &[&str] = &[
    "id",
    "at_ms",
    "duration_us",
    "session",
    "client",
    "profile",
    "server",
    "method",
    "name",
    "original",
    "outcome",
    "error_code",
    "error",
    "request_bytes",
    "response_bytes",
    "arguments",
    "result",
    "decision",
];

fn csv_header() -> String {
    CSV_COLUMNS.join(",") + "\n"
}

fn csv_line(row: &Row) -> String {
    let text = |value: Option<&str>| match value {
        None => String::new(),
        Some(value) => format!("\"{}\"", inert(value).replace('"', "\"\"")),
    };
    let record = &row.record;
    let fields = [
        row.id.to_string(),
        record.at_ms.to_string(),
        record.duration_us.to_string(),
        text(record.session.as_deref()),
        text(record.client.as_deref()),
        text(Some(&record.profile)),
        text(record.server.as_deref()),
        text(Some(&record.method)),
        text(record.name.as_deref()),
        text(record.original.as_deref()),
        text(Some(record.outcome)),
        record
            .error_code
            .map(|code| code.to_string())
            .unwrap_or_default(),
        text(record.error.as_deref()),
        record.request_bytes.to_string(),
        record.response_bytes.to_string(),
        text(record.arguments.as_deref()),
        text(record.result.as_deref()),
        text(record.decision.as_deref()),
    ];
    fields.join(",") + "\n"
}

/// `value` as a spreadsheet shows it and never runs it: a text that a spreadsheet would take
/// for a formula (any client may name itself `=HYPERLINK(…)`, any server a tool `@SUM`) gets a
/// leading `'`, as OWASP advises for CSV files.
fn inert(value: &str) -> std::borrow::Cow<'_, str> {
    const FORMULA_STARTS: &[char] = &['=', '+', '-', '@', '\t', '\r', '\n', '＝', '＋', '－', '＠'];
    match value.starts_with(FORMULA_STARTS) {
        true => format!("'{value}").into(),
        false => value.into(),
    }
}

fn log_of(api: &ApiState) -> Result<ActivityLog, ApiError> {
    api.hub()
        .activity()
        .cloned()
        .ok_or_else(|| ApiError::NotFound("this Switchboard keeps no activity log".to_owned()))
}

/// The filters every query of the log takes.
const FILTERS: &[&str] = &["since", "until", "server", "tool", "client", "outcome"];

/// The filter the query's parameters describe, which may also hold the `own` parameters of the
/// query; an unknown parameter or a bad value is refused with the reason.
fn filter(params: &Params, own: &[&str]) -> Result<Filter, ApiError> {
    let known = |key: &str| FILTERS.contains(&key) || own.contains(&key);
    if let Some(unknown) = params.keys().find(|key| !known(key)) {
        return Err(ApiError::BadRequest(format!(
            "unknown parameter {unknown:?}; this query takes {}",
            FILTERS
                .iter()
                .chain(own)
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let outcome = match params.get("outcome") {
        None => None,
        Some(text) => Some(Outcome::parse(text).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "outcome must be result, tool_error, error, timeout or cancelled, not {text:?}"
            ))
        })?),
    };
    let filter = Filter {
        since_ms: number(params, "since")?,
        until_ms: number(params, "until")?,
        server: params.get("server").cloned(),
        tool: params.get("tool").cloned(),
        client: params.get("client").cloned(),
        outcome,
    };
    if let (Some(since), Some(until)) = (filter.since_ms, filter.until_ms)
        && since > until
    {
        return Err(ApiError::BadRequest(format!(
            "since ({since}) is after until ({until})"
        )));
    }
    Ok(filter)
}

fn number(params: &Params, name: &str) -> Result<Option<u64>, ApiError> {
    params
        .get(name)
        .map(|text| {
            text.parse::<u64>().map_err(|_| {
                ApiError::BadRequest(format!(
                    "{name} must be a whole number (milliseconds since 1970 for times), not \
                     {text:?}"
                ))
            })
        })
        .transpose()
}

/// Runs a query of the database off the async threads.
async fn blocking<T: Send + 'static>(
    query: impl FnOnce() -> rusqlite::Result<T> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(query)
        .await
        .expect("a query does not panic")
        .map_err(|error| ApiError::Conflict(format!("the activity log cannot be read: {error}")))
}

#[cfg(test)]
mod tests {
    use super::inert;

    #[test]
    fn text_a_spreadsheet_would_run_is_made_inert() {
        for formula in [
            "=HYPERLINK(\"http://evil.example\",\"x\")",
            "+cmd|' /C calc'!A0",
            "-2+3",
            "@SUM(A1:A9)",
            "\t=1",
            "\r=1",
            "＝1+1",
        ] {
            assert_eq!(inert(formula), format!("'{formula}"));
        }
        for plain in ["demo__add", "a=b", "", "'quoted", "1e400"] {
            assert_eq!(inert(plain), plain);
        }
    }
}
