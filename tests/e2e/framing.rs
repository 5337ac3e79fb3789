//! Requests hyper cannot parse (a broken header line, too many headers) are answered by the real
//! binary with their status and our JSON error body, not hyper's bare status line.

use crate::harness::{Redis, Server, fresh_database};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends `raw` on a fresh connection and reads the whole answer: status and JSON body.
async fn answer_to(server: &Server, raw: &[u8]) -> (u16, Value) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", server.port)).await.unwrap();
    stream.write_all(raw).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head in {answer:?}"));
    assert!(head.to_ascii_lowercase().contains("content-type: application/json"), "{head}");
    let status = head[9..12].parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {body:?}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_framing_is_answered_in_our_error_format() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let namespace = aqs_testkit::namespace();
    let server = Server::start(&database, &redis.url(), &namespace).await;

    let (status, body) = answer_to(&server, b"GET /queue/v1/health HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n").await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_request")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("cannot be parsed"), "{body}");

    let mut many = b"GET /queue/v1/health HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..200 {
        many.extend_from_slice(format!("x-filler-{i}: y\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let (status, body) = answer_to(&server, &many).await;
    assert_eq!((status, body["error"].as_str()), (431, Some("invalid_request")), "{body}");

    // A well-formed request on the same server is untouched.
    let health = reqwest::get(format!("{}/queue/v1/health", server.base())).await.unwrap();
    assert!(health.status().is_success());
}
