//! HTTP over raw TCP, for requests whose bytes must be exactly as written (headers a client
//! library would fix, bodies that never end) and answers read as they come.

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::EVENT_LIMIT;

/// One answer read off the wire.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("a JSON body ({error}): {self:?}"))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then_some(value.trim())
        })
    }
}

/// Sends `request` (the request line and headers, without the blank line that ends them) and
/// `body` over a new connection, with `Content-Length` and `Connection: close` added, and reads
/// the whole answer.
pub async fn exchange(port: u16, request: &str, body: &str) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let message = format!(
        "{request}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(message.as_bytes()).await.expect("write");
    read_reply(&mut stream).await
}

/// Reads the answer on `stream` until the server closes it.
pub async fn read_reply(stream: &mut TcpStream) -> Reply {
    let mut answer = Vec::new();
    tokio::time::timeout(EVENT_LIMIT, stream.read_to_end(&mut answer))
        .await
        .expect("an answer in time")
        .expect("read");
    parse_reply(&answer)
}

fn parse_reply(answer: &[u8]) -> Reply {
    let answer = String::from_utf8_lossy(answer);
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("a whole answer: {answer:?}"));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {answer:?}"));
    Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}
