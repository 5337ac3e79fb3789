//! Hostile traffic does not grow the process: many distinct bad tokens, and a valid token asking
//! for many distinct unknown queues, leave every in-process cache within its bound, and the
//! caches still answer correctly afterwards.

use crate::helpers::spawn_app;
use aqs_core::token::TokenSecret;
use aqs_data_plane::{CACHE_CAPACITY, LAST_USE_CAPACITY};
use futures_util::StreamExt;
use reqwest::StatusCode;
use serde_json::json;

/// Sends `requests` (URL, token) with 64 in flight; returns every status.
async fn flood(client: &reqwest::Client, requests: Vec<(String, String)>) -> Vec<StatusCode> {
    futures_util::stream::iter(requests)
        .map(|(url, token)| {
            let client = client.clone();
            async move { client.get(url).bearer_auth(token).send().await.unwrap().status() }
        })
        .buffer_unordered(64)
        .collect()
        .await
}

#[tokio::test]
async fn distinct_bad_tokens_and_slugs_leave_the_caches_within_their_bounds() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let n = CACHE_CAPACITY + 1_000;

    let stats = app.url(&queue, "/stats");
    let bad_tokens: Vec<(String, String)> =
        (0..n).map(|_| (stats.clone(), TokenSecret::generate().expose().to_owned())).collect();
    let statuses = flood(&app.client, bad_tokens).await;
    assert!(statuses.iter().all(|s| *s == StatusCode::UNAUTHORIZED), "every unknown token is a 401");
    let sizes = app.state.cache_sizes();
    assert!(sizes.tokens <= CACHE_CAPACITY, "{sizes:?}");
    assert!(sizes.last_use <= 1, "bad tokens get no last-use stamps: {sizes:?}");

    let unknown_queues: Vec<(String, String)> =
        (0..n).map(|i| (format!("{}/queue/v1/no-such-queue-{i}/stats", app.base), queue.token.clone())).collect();
    let statuses = flood(&app.client, unknown_queues).await;
    assert!(statuses.iter().all(|s| *s == StatusCode::NOT_FOUND), "every unknown queue is a 404");
    let sizes = app.state.cache_sizes();
    assert!(sizes.tokens <= CACHE_CAPACITY && sizes.slugs <= CACHE_CAPACITY, "{sizes:?}");
    assert!(sizes.metas <= CACHE_CAPACITY && sizes.push <= CACHE_CAPACITY, "{sizes:?}");
    assert!(sizes.last_use <= LAST_USE_CAPACITY, "{sizes:?}");

    // Still correct after the flood: the valid token works, an unknown one does not.
    let (status, _) = app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": "after"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = app.get(TokenSecret::generate().expose(), &stats).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
