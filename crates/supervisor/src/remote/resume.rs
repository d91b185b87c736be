//! Reading a Streamable HTTP answer that is an SSE stream, and taking up again one the server
//! closed before its answer (SEP-1699): a `GET` with `Last-Event-ID`.

use reqwest::Method;
use reqwest::header::{ACCEPT, CONTENT_TYPE};

use super::sse::SseParser;
use super::{Failure, Outgoing, RESUME_TRIES, STREAM_RETRY, STREAM_RETRY_CAP, Shared, header_text};
use wire::era::header;
use wire::method::Method as McpMethod;

impl Shared {
    /// Opens a `GET` stream of the session, resuming after `last` (`Last-Event-ID`) if given.
    pub(super) async fn open_get(&self, last: Option<&str>) -> Result<reqwest::Response, Failure> {
        let session = self.session.lock().expect("session lock").clone();
        let version = self
            .negotiated_version
            .lock()
            .expect("version lock")
            .clone();
        self.authorized(|credential| {
            let mut request = self
                .request(Method::GET, self.url.clone(), credential.as_ref())
                .header(ACCEPT, "text/event-stream");
            if let Some(session) = &session {
                request = request.header(header::SESSION_ID, session.as_str());
            }
            if let Some(version) = &version {
                request = request.header(header::PROTOCOL_VERSION, version.as_str());
            }
            if let Some(last) = last {
                request = request.header("last-event-id", last);
            }
            self.send_request(request)
        })
        .await
    }

    /// Puts on the pipe the messages of an SSE answer; whether one answered `outgoing`'s
    /// request. `parser` keeps the last event id and `retry` the stream sent.
    pub(super) async fn read_events(
        &self,
        response: &mut reqwest::Response,
        parser: &mut SseParser,
        outgoing: &Outgoing,
    ) -> Result<bool, Failure> {
        let mut answered = false;
        while let Some(chunk) = self.next_chunk(response).await? {
            let events = parser.feed(&chunk).map_err(|too_large| {
                Failure::Error(format!(
                    "{} sent a message over the limit of {} bytes",
                    self.server.shown_url(),
                    too_large.limit
                ))
            })?;
            // An event without data (a priming event) carries no message.
            for event in events.iter().filter(|event| !event.data.is_empty()) {
                answered |= self.deliver_message(event.data.as_bytes(), outgoing).await;
            }
        }
        Ok(answered)
    }

    /// Takes up a request's stream the server closed before its answer, after the event it
    /// last sent (SEP-1699): a `GET` with `Last-Event-ID`, after the `retry` the stream asked
    /// for; again while each stream brings a new event, at most [`RESUME_TRIES`] times without.
    pub(super) async fn resume_answer(
        &self,
        mut parser: SseParser,
        outgoing: &Outgoing,
    ) -> Result<bool, Failure> {
        let mut fruitless = 0;
        while let Some(last) = parser.last_event_id().map(str::to_owned) {
            if fruitless == RESUME_TRIES {
                break;
            }
            let delay = parser.retry().unwrap_or(STREAM_RETRY).min(STREAM_RETRY_CAP);
            if self.wait(delay).await {
                return Ok(false);
            }
            let mut response = self.open_get(Some(&last)).await?;
            let content_type = header_text(response.headers(), CONTENT_TYPE.as_str())
                .unwrap_or_default()
                .to_ascii_lowercase();
            if !response.status().is_success() || !content_type.starts_with("text/event-stream") {
                return Err(Failure::Error(format!(
                    "{} closed its answer to {} early, and answered HTTP {} when it was taken \
                     up again after event {last}",
                    self.server.shown_url(),
                    outgoing
                        .method
                        .as_ref()
                        .map_or("the request", McpMethod::as_str),
                    response.status().as_u16(),
                )));
            }
            let mut resumed = SseParser::new(self.max_message_size);
            if self
                .read_events(&mut response, &mut resumed, outgoing)
                .await?
            {
                return Ok(true);
            }
            fruitless = match resumed.last_event_id() {
                Some(id) if id != last => 0,
                _ => fruitless + 1,
            };
            if resumed.last_event_id().is_some() || resumed.retry().is_some() {
                parser = resumed;
            }
        }
        Ok(false)
    }
}
