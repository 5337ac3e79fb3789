//! One HTTP attempt: POST a signed body to the handler and say what happened, as an [`Answer`].
//! Nothing here decides what the answer means (that is `outcome`) or touches the queue.
//!
//! The client is our own, thin one over hyper: message mode sends one POST per message, and a
//! general client's pool, URL handling and layers cost about a third of a delivery's CPU
//! (`docs/performance.md`). Each dispatcher keeps the connections it opened (`connect`: the SSRF
//! guard, TLS) in its settings' [`Connections`], at most one per request in flight, and takes the
//! one returned last, while it is well inside the handler's own idle timeout (`keep_alive`). It
//! never follows redirects (a 3xx is an answer like any other) and uses no proxy.

use super::connect::{Connector, NotConnected, Sender};
use super::keep_alive;
use super::settings::PushSettings;
use super::ssrf::Refused;
use aqs_core::time::now_ms;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HOST, HeaderName, HeaderValue, RETRY_AFTER, USER_AGENT};
use hyper::{Method, Request};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const AGENT: &str = concat!("AQS-Push/", env!("CARGO_PKG_VERSION"));
const WEBHOOK_ID: HeaderName = HeaderName::from_static("webhook-id");
const WEBHOOK_TIMESTAMP: HeaderName = HeaderName::from_static("webhook-timestamp");
const WEBHOOK_SIGNATURE: HeaderName = HeaderName::from_static("webhook-signature");
/// An answer longer than this is read no further and its connection is not kept: what a verdict
/// uses of it is far shorter (the caller's `keep`).
const DRAIN_MAX_BYTES: usize = 64 * 1024;

/// What one request came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The handler answered with a status. `body` is the start of its answer (up to the bytes the
    /// caller asked to keep).
    Status { status: u16, retry_after: Option<String>, body: Vec<u8> },
    /// No complete answer within the target's timeout.
    TimedOut,
    /// Connection, TLS or protocol failure.
    Failed(String),
    /// The SSRF guard refused the address.
    Refused(Refused),
}

#[derive(Clone, Debug)]
pub struct Attempt {
    pub answer: Answer,
    pub sent_at_ms: u64,
    pub latency: Duration,
}

/// The idle connections of one dispatcher to its handler, the last returned on top, each with the
/// moment after which it may no longer carry a request.
#[derive(Default)]
pub struct Connections {
    idle: Mutex<Vec<(Sender, Instant)>>,
}

impl std::fmt::Debug for Connections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.lock().map(|idle| idle.len()).unwrap_or_default();
        f.debug_struct("Connections").field("idle", &idle).finish()
    }
}

impl Connections {
    /// The most recently returned connection that is still open and inside its reuse limit; the
    /// ones above it that are not are dropped.
    fn take(&self) -> Option<Sender> {
        let mut idle = self.idle.lock().expect("the idle list is never poisoned");
        while let Some((sender, until)) = idle.pop() {
            if Instant::now() < until && !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    fn put(&self, sender: Sender, reuse_for: Duration) {
        let until = Instant::now() + reuse_for;
        self.idle.lock().expect("the idle list is never poisoned").push((sender, until));
    }
}

/// The HTTP client of every dispatcher of a process.
pub struct PushClient {
    connector: Connector,
}

impl PushClient {
    pub fn new(allow_private: bool) -> Self {
        Self { connector: Connector::new(allow_private) }
    }

    /// POSTs `body` signed as `webhook-id: id`, waiting up to the target's timeout, and keeps at
    /// most `keep` bytes of the answer.
    pub async fn send(&self, settings: &PushSettings, id: &str, body: Vec<u8>, keep: usize) -> Attempt {
        let sent_at_ms = now_ms();
        let started = Instant::now();
        let exchange = self.exchange(settings, id, body, keep, sent_at_ms);
        let answer = tokio::time::timeout(settings.timeout(), exchange).await.unwrap_or(Answer::TimedOut);
        Attempt { answer, sent_at_ms, latency: started.elapsed() }
    }

    async fn exchange(&self, settings: &PushSettings, id: &str, body: Vec<u8>, keep: usize, now: u64) -> Answer {
        let timestamp = now / 1000;
        let signature = settings.keys.header(id, timestamp, &body, now);
        // Filled in place: the builder moves the whole request through each of its steps.
        let mut request = Request::new(Full::new(Bytes::from(body)));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = settings.target.clone();
        let headers = request.headers_mut();
        headers.reserve(6);
        headers.insert(HOST, settings.host.clone());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(USER_AGENT, HeaderValue::from_static(AGENT));
        headers.insert(WEBHOOK_ID, HeaderValue::try_from(id).expect("message and batch ids are hex"));
        headers.insert(WEBHOOK_TIMESTAMP, HeaderValue::from(timestamp));
        headers.insert(WEBHOOK_SIGNATURE, HeaderValue::try_from(signature).expect("a signature is base64"));
        // A kept connection whose close hyper had already seen gives the request back unsent: it
        // goes out again on the next kept one, or a new one. A close not yet seen (still in the
        // socket's buffer) lets the request be written, and it fails: the handler may have read
        // it, so it is never sent twice here, and the failure is the answer (the `keep_alive`
        // limits keep that rare). A new connection that fails is the answer too.
        let (sender, response) = loop {
            let (mut sender, fresh) = match settings.connections.take() {
                Some(sender) => (sender, false),
                // Boxed: opening (resolution, TCP, TLS, the handshake) is rare once connections
                // are kept, and inline its state made every delivery's future 4.4 KiB instead of
                // under 1 KiB, moved whole as each is spawned and finished.
                None => match Box::pin(self.connector.open(&settings.url)).await {
                    Ok(sender) => (sender, true),
                    Err(NotConnected::Refused(refused)) => return Answer::Refused(refused),
                    Err(NotConnected::Failed(text)) => return Answer::Failed(text),
                    Err(NotConnected::TimedOut) => return Answer::TimedOut,
                },
            };
            if let Err(err) = sender.ready().await {
                if fresh {
                    return Answer::Failed(format!("connection failed: {err}"));
                }
                continue;
            }
            match sender.try_send_request(request).await {
                Ok(response) => break (sender, response),
                Err(mut err) => match err.take_message() {
                    Some(unsent) if !fresh => request = unsent,
                    _ => return Answer::Failed(format!("connection failed: {}", err.error())),
                },
            }
        };
        let status = response.status().as_u16();
        let retry_after = response.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let reuse_for = keep_alive::reuse_for(response.headers());
        let (kept, whole) = read_start(response.into_body(), keep).await;
        if let (true, Some(reuse_for)) = (whole, reuse_for) {
            settings.connections.put(sender, reuse_for);
        }
        Answer::Status { status, retry_after, body: kept }
    }
}

/// The first `keep` bytes of an answer's body, and whether the body was read to its end (only
/// then can its connection carry another request).
async fn read_start(mut body: Incoming, keep: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut read = 0;
    while read <= DRAIN_MAX_BYTES {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    read += data.len();
                    let room = keep.saturating_sub(kept.len());
                    kept.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            None => return (kept, true),
            // The status is the answer; a body cut short only shortens the reason.
            Some(Err(_)) => return (kept, false),
        }
    }
    (kept, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqs_core::ids::QueueId;
    use aqs_core::projection::{PushMode, PushRecord};
    use aqs_core::secret::Secret;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::mpsc;

    fn settings(url: &str) -> PushSettings {
        let record = PushRecord {
            queue: "q".into(),
            handler_url: url.to_owned(),
            mode: PushMode::Message,
            messages_per_run: 1,
            wait_seconds: 0,
            timeout_seconds: 5,
            concurrency: 1,
            secret: Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            previous_secret: None,
            previous_until_ms: 0,
        };
        PushSettings::new(QueueId::new(), record).unwrap()
    }

    /// Reads one request off `reader` (its head, then the body its `content-length` gives) and
    /// says which message it carried (`webhook-id`).
    fn read_request(reader: &mut BufReader<TcpStream>) -> String {
        let (mut length, mut id) = (0, String::new());
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            let line = line.to_ascii_lowercase();
            if let Some(value) = line.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
            if let Some(value) = line.strip_prefix("webhook-id:") {
                id = value.trim().to_owned();
            }
        }
        reader.read_exact(&mut vec![0; length]).unwrap();
        id
    }

    fn answer(reader: &mut BufReader<TcpStream>, body: &str) {
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}", body.len());
        reader.get_mut().write_all(head.as_bytes()).unwrap();
    }

    /// A handler on a thread of its own: it answers the first request on its first connection,
    /// closes that connection when told to (saying so once it has), then answers every request
    /// on a second connection, reporting which message each carried.
    fn handler() -> (String, mpsc::Sender<()>, mpsc::Receiver<()>, mpsc::Receiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}/hook", listener.local_addr().unwrap().port());
        let (close, told) = mpsc::channel();
        let (closed, done) = mpsc::channel();
        let (carried, seen) = mpsc::channel();
        std::thread::spawn(move || {
            let mut first = BufReader::new(listener.accept().unwrap().0);
            read_request(&mut first);
            answer(&mut first, "first");
            told.recv().unwrap();
            drop(first);
            closed.send(()).unwrap();
            let mut second = BufReader::new(listener.accept().unwrap().0);
            loop {
                let id = read_request(&mut second);
                answer(&mut second, "second");
                if carried.send(id).is_err() {
                    return;
                }
            }
        });
        (url, close, done, seen)
    }

    /// The handler closed a kept connection and the connection's task has not yet seen it when
    /// the next request takes it (a server's restart, or its idle timeout when it states none):
    /// hyper writes the request and then finds the connection gone. The request may have reached
    /// the handler, so it is not sent again here: the failure is the delivery's answer (the
    /// message is retried after its backoff), and the next request goes out on a new connection.
    #[tokio::test]
    async fn a_request_sent_on_a_connection_the_handler_closed_is_not_sent_again() {
        let (url, close, closed, seen) = handler();
        let settings = settings(&url);
        let client = PushClient::new(true);
        let first = client.send(&settings, "m1", b"{}".to_vec(), 64).await;
        assert_eq!(first.answer, Answer::Status { status: 200, retry_after: None, body: b"first".to_vec() });

        // Blocking this (only) runtime thread: the kept connection's task cannot run, so its
        // sender still looks open when the next request takes it.
        close.send(()).unwrap();
        closed.recv().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let second = client.send(&settings, "m2", b"{}".to_vec(), 64).await;
        assert!(
            matches!(&second.answer, Answer::Failed(why) if why.starts_with("connection failed")),
            "{:?}",
            second.answer
        );
        let third = client.send(&settings, "m3", b"{}".to_vec(), 64).await;
        assert_eq!(third.answer, Answer::Status { status: 200, retry_after: None, body: b"second".to_vec() });
        assert_eq!(seen.recv_timeout(Duration::from_secs(5)).unwrap(), "m3", "m2 was not sent again");
    }
}
