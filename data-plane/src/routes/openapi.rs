//! `GET /queue/v1/openapi.json`: the queue API's OpenAPI 3.1 document, generated from the handlers'
//! `#[utoipa::path]` annotations and the types they answer with. Served without a token.

use super::{admin, alternatives, consume, dead_letters, extend, health, publish, stats};
use aqs_core::openapi;
use axum::http::HeaderValue;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use std::sync::LazyLock;
use utoipa::OpenApi;
use utoipa::openapi::Required;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "AQS queue API",
        description = "Publish, consume, acknowledge and manage the messages of one queue. Every \
            per-queue route takes the queue's token (`Authorization: Bearer acq_…`) with the scope it \
            names; a custom host serves the same routes at `/`, without `/queue/v1/{slug}`. Every \
            error is `{\"error\", \"message\"}` with the status its code names.",
    ),
    paths(
        health::health,
        serve,
        publish::publish_one,
        publish::publish_batch,
        consume::consume,
        consume::ack,
        consume::nack,
        extend::extend,
        stats::stats,
        admin::peek,
        admin::purge,
        dead_letters::list,
        dead_letters::replay,
        dead_letters::purge,
    ),
    tags(
        (name = "send", description = "Publish (send scope)."),
        (name = "consume", description = "Receive and settle (consume scope)."),
        (name = "queue", description = "Figures (send or consume scope)."),
        (name = "manage", description = "Look and clean up (manage scope)."),
        (name = "health", description = "No token."),
    )
)]
struct QueueApi;

/// The document, with the error schema and the queue token's security scheme.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = QueueApi::openapi();
    for path in ["/queue/v1/{slug}/consume", "/queue/v1/{slug}/purge"] {
        optional_body(&mut doc, path);
    }
    alternatives::one_of(&mut doc, "PublishRequest", publish::body_alternatives());
    alternatives::one_of(&mut doc, "SelectionRequest", dead_letters::selection_alternatives());
    openapi::finish(
        &mut doc,
        "queue_token",
        "The queue's token, `acq_…`, minted with the queue or through the management API.",
        Some("acq_ token"),
    );
    doc
}

/// Marks the body of `POST path` optional: the route takes no body at all (every field has a
/// default). utoipa marks a body optional only with an `Option` type, which would also allow a
/// JSON `null` the route refuses.
fn optional_body(doc: &mut utoipa::openapi::OpenApi, path: &str) {
    let body =
        doc.paths.paths.get_mut(path).and_then(|item| item.post.as_mut()).and_then(|op| op.request_body.as_mut());
    body.unwrap_or_else(|| panic!("POST {path} has no request body")).required = Some(Required::False);
}

static DOCUMENT: LazyLock<String> = LazyLock::new(|| document().to_json().expect("the OpenAPI document serialises"));

/// This document.
#[utoipa::path(get, path = "/queue/v1/openapi.json", operation_id = "queue_openapi", tag = "health",
    responses((status = 200, description = "The OpenAPI 3.1 document of the queue API.",
        content_type = "application/json", body = Object)))]
pub async fn serve() -> Response {
    ([(CONTENT_TYPE, HeaderValue::from_static("application/json"))], DOCUMENT.as_str()).into_response()
}
