//! The HTTP+SSE transport of 2024-11-05 on a link: a GET stream that names the endpoint for
//! POSTs, and carries every answer.

use std::sync::Arc;

use reqwest::Method;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use tracing::Instrument as _;

use super::sse::SseParser;
use super::{Failure, LinkEnd, Outgoing, Shared, header_text, quoted};

impl Shared {
    /// Sends a message over the HTTP+SSE transport (its answer comes on the stream).
    pub(super) async fn send_http_sse(self: &Arc<Self>, line: &[u8]) -> Result<(), Failure> {
        let endpoint = self
            .http_sse_endpoint
            .get_or_try_init(|| self.clone().open_http_sse_stream())
            .await?
            .clone();
        let response = self
            .authorized(|credential| {
                let request = self
                    .request(Method::POST, endpoint.clone(), credential.as_ref())
                    .header(CONTENT_TYPE, "application/json")
                    .body(line.to_vec());
                self.send_request(request)
            })
            .await?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let body = self.read_body(response).await.unwrap_or_default();
        Err(Failure::Error(format!(
            "{} answered HTTP {}: {}",
            endpoint,
            status.as_u16(),
            quoted(&body)
        )))
    }

    /// Opens the event stream of the HTTP+SSE transport and waits for the endpoint it names;
    /// then reads the stream, delivering each message, until it ends (and with it the link).
    async fn open_http_sse_stream(self: Arc<Self>) -> Result<reqwest::Url, Failure> {
        let mut response = self
            .authorized(|credential| {
                let request = self
                    .request(Method::GET, self.url.clone(), credential.as_ref())
                    .header(ACCEPT, "text/event-stream");
                self.send_request(request)
            })
            .await?;
        let content_type =
            header_text(response.headers(), CONTENT_TYPE.as_str()).unwrap_or_default();
        if !response.status().is_success() || !content_type.starts_with("text/event-stream") {
            return Err(Failure::Error(format!(
                "{} speaks neither Streamable HTTP nor HTTP+SSE: its event stream answered HTTP \
                 {} ({content_type})",
                self.server.shown_url(),
                response.status().as_u16()
            )));
        }
        let mut parser = SseParser::new(self.max_message_size);
        let endpoint = loop {
            let chunk = self.next_chunk(&mut response).await?.ok_or_else(|| {
                Failure::Error(format!(
                    "{} closed its event stream before naming an endpoint",
                    self.server.shown_url()
                ))
            })?;
            let events = parser.feed(&chunk).map_err(|_| {
                Failure::Error(format!(
                    "{} sent an event over the size limit",
                    self.server.shown_url()
                ))
            })?;
            if let Some(event) = events
                .into_iter()
                .find(|event| event.event.as_deref() == Some("endpoint"))
            {
                break self.url.join(event.data.trim()).map_err(|error| {
                    Failure::Error(format!(
                        "{} named an endpoint that is not a URL ({error})",
                        self.server.shown_url()
                    ))
                })?;
            }
        };
        if endpoint.origin() != self.url.origin() {
            return Err(Failure::Error(format!(
                "{} named an endpoint on another origin ({endpoint}); refused",
                self.server.shown_url()
            )));
        }
        let span = tracing::Span::current();
        tokio::spawn(
            self.clone()
                .read_http_sse_stream(response, parser)
                .instrument(span),
        );
        Ok(endpoint)
    }

    async fn read_http_sse_stream(
        self: Arc<Self>,
        mut response: reqwest::Response,
        mut parser: SseParser,
    ) {
        let nothing = Outgoing::nothing();
        loop {
            let chunk = match self.next_chunk(&mut response).await {
                Ok(Some(chunk)) => chunk,
                Ok(None) | Err(_) => break,
            };
            let Ok(events) = parser.feed(&chunk) else {
                break;
            };
            for event in events {
                if matches!(event.event.as_deref(), None | Some("message")) {
                    self.deliver_message(event.data.as_bytes(), &nothing).await;
                }
            }
        }
        self.finish(LinkEnd::Lost(format!(
            "{} closed its event stream",
            self.server.shown_url()
        )));
    }
}
