//! The send form posts `multipart/form-data` so that a file can be the body: a chosen file is
//! stored byte for byte (its part's content type when the content type field is left empty), a
//! file over the queue's payload size is an error beside the file input with everything typed
//! kept, no file chosen keeps the text path, and the CSRF token and one-time form id guard a
//! multipart post exactly as they guard an urlencoded one.

use super::browser::Browser;
use super::support::{Part, TestConsole, Visitor, queue_of, spawn_console};
use aqs_control_plane::Queue;
use aqs_core::time::now_ms;
use aqs_engine::{ConsumeOutcome, Delivery};
use fantoccini::Locator;
use serde_json::json;
use sqlx::PgPool;

const SEND: &str = "/queues/jobs/messages/send";

/// Every byte value, NUL and 0xFF among them, and bytes that are no UTF-8.
fn binary() -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..=255u8).collect();
    bytes.extend_from_slice(&[0x00, 0xff, 0xfe, 0x00, b'\r', b'\n', 0xc3]);
    bytes
}

async fn signed_up_with_jobs(app: &TestConsole) -> (Visitor, Queue) {
    let mut ada = Visitor::new(app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    (ada, queue_of(app, "ada@example.com", "jobs").await)
}

/// The ready messages, received through the engine.
async fn received(app: &TestConsole, queue: &Queue) -> Vec<Delivery> {
    match app.engine.consume(queue.id, 10, 30_000, now_ms(), 0).await.unwrap() {
        ConsumeOutcome::Delivered { deliveries, .. } => deliveries,
        other => panic!("consume: {other:?}"),
    }
}

async fn ready(app: &TestConsole, queue: &Queue) -> u64 {
    app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap().ready
}

#[sqlx::test(migrations = "../migrations")]
async fn a_binary_file_is_sent_byte_for_byte(db: PgPool) {
    let app = spawn_console(db).await;
    let (mut ada, queue) = signed_up_with_jobs(&app).await;
    let page = ada.get(SEND).await;
    page.assert_contains("enctype=\"multipart/form-data\"");
    page.assert_contains("name=\"body_file\" type=\"file\"");

    // Content type left empty: the file's own; the text typed beside it is not sent.
    let bytes = binary();
    let file =
        Part::File { name: "body_file", file_name: "blob.bin", content_type: Some("image/x-test"), bytes: &bytes };
    let sent = ada
        .post_multipart(
            SEND,
            &[Part::Text("body", "ignored text"), file, Part::Text("content_type", ""), Part::Text("group_id", "g-1")],
        )
        .await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    let page = ada.follow(sent).await;
    page.assert_contains("Not UTF-8 text: shown as base64.");

    // A part without a content type, and a content type typed: the typed one wins; without
    // either, `application/octet-stream`.
    ada.get(SEND).await;
    let file = Part::File { name: "body_file", file_name: "b.dat", content_type: None, bytes: &[0, 0xff] };
    let sent = ada.post_multipart(SEND, &[file, Part::Text("content_type", "")]).await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    ada.get(SEND).await;
    let file = Part::File { name: "body_file", file_name: "c.dat", content_type: Some("image/png"), bytes: &[0xff] };
    let sent = ada.post_multipart(SEND, &[file, Part::Text("content_type", "application/x-typed")]).await;
    assert_eq!(sent.status, 303, "{}", sent.body);

    let got = received(&app, &queue).await;
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].body, bytes, "stored byte for byte");
    assert_eq!((got[0].content_type.as_str(), got[0].group_id.as_deref()), ("image/x-test", Some("g-1")));
    assert_eq!((got[1].body.as_slice(), got[1].content_type.as_str()), (&[0, 0xff][..], "application/octet-stream"));
    assert_eq!((got[2].body.as_slice(), got[2].content_type.as_str()), (&[0xff][..], "application/x-typed"));
}

#[sqlx::test(migrations = "../migrations")]
async fn a_file_over_the_payload_size_is_a_field_error_and_nothing_is_sent(db: PgPool) {
    let app = spawn_console(db).await;
    let (mut ada, queue) = signed_up_with_jobs(&app).await;
    ada.get(SEND).await;
    // One byte over the queue's 1 MiB.
    let large = vec![0xffu8; 1024 * 1024 + 1];
    let file = Part::File { name: "body_file", file_name: "big.bin", content_type: None, bytes: &large };
    let refused = ada
        .post_multipart(
            SEND,
            &[
                Part::Text("body", "typed-marker"),
                file,
                Part::Text("content_type", "text/plain"),
                Part::Text("attributes", "{\"kind\": \"upload\"}"),
                Part::Text("group_id", "g-7"),
                Part::Text("delay_seconds", "3"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422, "{}", &refused.body[..refused.body.len().min(2000)]);
    refused.assert_contains("id=\"body_file-error\">The file is 1.0 MiB");
    refused.assert_contains("this queue accepts up to 1 MiB");
    refused.assert_contains(">typed-marker</textarea>");
    refused.assert_contains("value=\"text/plain\"");
    refused.assert_contains("{&#34;kind&#34;: &#34;upload&#34;}");
    refused.assert_contains("value=\"g-7\"");
    refused.assert_contains("value=\"3\"");
    assert_eq!(ready(&app, &queue).await, 0, "nothing published");

    // On a 10 MiB queue a 3 MiB file (over axum's default 2 MB multipart limit) is sent: the
    // send route's own limit is the one that applies.
    ada.get("/queues/jobs/settings").await;
    let fields = [
        ("visibility_timeout_seconds", "30"),
        ("max_attempts", "5"),
        ("payload_size", "10485760"),
        ("storage_limit_mib", "1024"),
    ];
    let saved = ada.post("/queues/jobs/settings", &fields).await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    ada.get(SEND).await;
    let large: Vec<u8> = (0..3 * 1024 * 1024).map(|i: u32| (i % 251) as u8).collect();
    let file = Part::File { name: "body_file", file_name: "big.bin", content_type: None, bytes: &large };
    let sent = ada.post_multipart(SEND, &[file, Part::Text("content_type", "")]).await;
    assert_eq!(sent.status, 303, "{}", &sent.body[..sent.body.len().min(2000)]);
    let got = received(&app, &queue).await;
    assert_eq!(got.len(), 1);
    assert!(got[0].body == large, "stored byte for byte");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_multipart_post_needs_the_token_and_sends_once(db: PgPool) {
    let app = spawn_console(db).await;
    let (mut ada, queue) = signed_up_with_jobs(&app).await;
    let mut bob = Visitor::new(&app);
    bob.sign_up("bob@example.com").await;
    let bobs_token = bob.csrf.clone().unwrap();
    ada.get(SEND).await;
    let file = Part::File { name: "body_file", file_name: "x.bin", content_type: None, bytes: &[0, 1, 2] };

    for token in ["", "forged", bobs_token.as_str()] {
        let page = ada.post_multipart(SEND, &[file, Part::Text("content_type", ""), Part::Text("csrf", token)]).await;
        assert_eq!(page.status, 403, "token {token:?}");
        page.assert_contains("The form has expired");
    }
    // No token field at all: the same page as the urlencoded form gets.
    let mut no_token = Visitor::new(&app);
    assert!(ada.cookie("aqs_session").is_some());
    no_token.set_cookie("aqs_session", ada.cookie("aqs_session").unwrap_or_default());
    let page = no_token.post_multipart(SEND, &[file, Part::Text("content_type", "")]).await;
    // The refusal page's menu carries a token: dropped, so the urlencoded post has none either.
    no_token.csrf = None;
    let urlencoded = no_token.post(SEND, &[("body", "x"), ("content_type", "text/plain")]).await;
    assert_eq!((page.status, urlencoded.status), (403, 403));
    page.assert_contains("The form has expired");
    assert_eq!(ready(&app, &queue).await, 0, "nothing sent without the token");

    // Sent once; the same form id again is answered with the first result, not sent twice.
    let form_id = ada.form_id.clone().unwrap();
    let first = ada.post_multipart(SEND, &[file, Part::Text("content_type", "")]).await;
    assert_eq!(first.status, 303, "{}", first.body);
    let replay =
        ada.post_multipart(SEND, &[file, Part::Text("content_type", ""), Part::Text("form_id", &form_id)]).await;
    assert_eq!((replay.status, replay.location()), (303, first.location()));
    ada.follow(replay).await.assert_contains("already sent; it was done once and not again");
    assert_eq!(ready(&app, &queue).await, 1, "sent once");
    // A form id that is no id is refused as the urlencoded form's is.
    let page = ada.post_multipart(SEND, &[file, Part::Text("form_id", "nope")]).await;
    assert_eq!(page.status, 400);
    page.assert_contains("This form is out of date");
}

#[sqlx::test(migrations = "../migrations")]
async fn with_no_file_chosen_the_text_is_sent(db: PgPool) {
    let app = spawn_console(db).await;
    let (mut ada, queue) = signed_up_with_jobs(&app).await;
    // A browser sends an empty file input as a part with an empty file name and no bytes.
    let none =
        Part::File { name: "body_file", file_name: "", content_type: Some("application/octet-stream"), bytes: b"" };
    ada.get(SEND).await;
    let sent = ada
        .post_multipart(
            SEND,
            &[Part::Text("body", "{\"héllo\": 1}"), none, Part::Text("content_type", "application/json")],
        )
        .await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    ada.get(SEND).await;
    let sent = ada
        .post_multipart(
            SEND,
            &[
                Part::Text("body", "/wA="),
                Part::Text("body_encoding", "base64"),
                none,
                Part::Text("content_type", "application/octet-stream"),
            ],
        )
        .await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    // An empty content type with no file is still the text path's error.
    ada.get(SEND).await;
    let refused =
        ada.post_multipart(SEND, &[Part::Text("body", "kept-text"), none, Part::Text("content_type", "")]).await;
    assert_eq!(refused.status, 422);
    refused.assert_contains("id=\"content_type-error\"");
    refused.assert_contains(">kept-text</textarea>");
    // And the urlencoded form still works.
    let sent = ada.post(SEND, &[("body", "plain"), ("content_type", "text/plain")]).await;
    assert_eq!(sent.status, 303, "{}", sent.body);

    let got = received(&app, &queue).await;
    let bodies: Vec<&[u8]> = got.iter().map(|d| d.body.as_slice()).collect();
    assert_eq!(bodies, ["{\"héllo\": 1}".as_bytes(), &[0xff, 0x00][..], &b"plain"[..]]);
}

#[sqlx::test(migrations = "../migrations")]
async fn chromium_without_javascript_uploads_a_chosen_file(db: PgPool) {
    let app = spawn_console(db).await;
    let (ada, queue) = signed_up_with_jobs(&app).await;
    let bytes = binary();
    let folder = std::env::temp_dir().join(format!("aqs-upload-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!("{}.bin", queue.slug));
    std::fs::write(&path, &bytes).unwrap();

    let browser = Browser::open(&app, &ada, false, 1280).await;
    browser.goto(&format!("{}{SEND}", app.base)).await;
    let input = browser.client.find(Locator::Css("#body_file")).await.unwrap();
    input.send_keys(path.to_str().unwrap()).await.expect("choose the file");
    browser.client.find(Locator::Css("#content_type")).await.unwrap().clear().await.unwrap();
    browser.client.find(Locator::Css("form.stack button[type=submit]")).await.unwrap().click().await.unwrap();
    browser.until("the sent message's page", "return document.body.textContent.includes('Sent message');").await;
    assert_eq!(browser.run("return document.body.textContent.includes('shown as base64');").await, json!(true));
    std::fs::remove_file(&path).ok();

    let got = received(&app, &queue).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, bytes, "stored byte for byte");
    // Chromium names a `.bin` file's type itself; whatever it is, the part's type was used.
    assert!(!got[0].content_type.is_empty() && got[0].content_type != "application/json", "{}", got[0].content_type);
}
