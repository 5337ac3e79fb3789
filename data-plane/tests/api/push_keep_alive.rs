//! Kept connections and the handler's own idle timeout: a request sent on a connection the
//! handler is closing is never read, and its delivery fails and spends an attempt. The server
//! here states its timeout (`Keep-Alive: timeout=2`, as Node's does) and plays that race the way
//! a real network would: a request arriving on a connection idle for its timeout or longer meets
//! the close and is not answered.

use crate::helpers::spawn_app;
use crate::push_handler::record;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const WAIT: Duration = Duration::from_secs(10);
const SERVER_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Clone, Default)]
struct ClosingServer {
    connections: Arc<AtomicUsize>,
    /// Requests that met the close: never answered.
    unanswered: Arc<AtomicUsize>,
    /// The JSON bodies answered, in order.
    answered: Arc<Mutex<Vec<Value>>>,
}

impl ClosingServer {
    async fn start() -> (Self, String) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}/hook", listener.local_addr().unwrap().port());
        let server = Self::default();
        let accepting = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                accepting.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(accepting.clone().serve(stream));
            }
        });
        (server, url)
    }

    async fn serve(self, mut stream: TcpStream) {
        let mut buffer = Vec::new();
        let mut answered_at: Option<Instant> = None;
        while let Some(body) = read_request(&mut stream, &mut buffer).await {
            if answered_at.is_some_and(|at| at.elapsed() >= SERVER_TIMEOUT) {
                self.unanswered.fetch_add(1, Ordering::SeqCst);
                return;
            }
            self.answered.lock().unwrap().push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            let answer = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nkeep-alive: timeout=2\r\n\r\n";
            if stream.write_all(answer.as_bytes()).await.is_err() {
                return;
            }
            answered_at = Some(Instant::now());
        }
    }

    async fn wait_answered(&self, n: usize) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let answered = self.answered.lock().unwrap().clone();
            if answered.len() >= n {
                return answered;
            }
            assert!(start.elapsed() < WAIT, "answered {} of {n}", answered.len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The body of the next request on `stream` (`None` once the client closed it).
async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Vec<u8>> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if buffer.len() >= end + 4 + length {
                let body = buffer[end + 4..end + 4 + length].to_vec();
                buffer.drain(..end + 4 + length);
                return Some(body);
            }
        }
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
}

#[tokio::test]
async fn a_connection_is_reused_only_well_inside_the_timeout_the_handler_states() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let (server, url) = ClosingServer::start().await;
    for i in 0..3 {
        app.publish_text(&queue, &format!("job {i}")).await;
    }
    let mut target = record(&queue, &url);
    target.concurrency = 1;
    app.set_push(&queue, &target).await;

    // One after the other: the connection carries each.
    server.wait_answered(3).await;
    assert_eq!(server.connections.load(Ordering::SeqCst), 1, "back to back, one connection");

    // Idle past the handler's timeout: the next delivery must not go out on that connection.
    tokio::time::sleep(SERVER_TIMEOUT + Duration::from_millis(500)).await;
    app.publish_text(&queue, "job 3").await;
    let answered = server.wait_answered(4).await;
    app.wait_drained(&queue, WAIT).await;
    assert_eq!(server.unanswered.load(Ordering::SeqCst), 0, "no request met the handler's close");
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    assert!(answered.iter().all(|body| body["attempts"] == 0), "each delivered on its first attempt: {answered:?}");
    let stats = app.state.engine.stats(queue.id, aqs_core::time::now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.delivered_today, stats.acked_today), (4, 4));
}
