//! What both OpenAPI documents share: the error answer's schema, [`ERRORS`] (which status answers
//! each error code), the error responses an operation lists ([`errors!`](crate::errors)), the
//! security scheme of a bearer token, and [`Routes`], a router that records the paths it serves so
//! a test can hold them against the document.
//!
//! The documents are generated from the handlers (`#[utoipa::path]`) and the types they answer
//! with (`ToSchema`), so what is served and what is documented come from the same code.

use axum::Router;
use axum::routing::MethodRouter;
use std::collections::BTreeMap;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr};

/// Every error code a client can get, with its status (`docs/errors.md`). A server fault (500,
/// `internal`) is not listed: no answer of the API is meant to be one.
pub const ERRORS: &[(u16, &[&str])] = &[
    (400, &["invalid_request", "receipt_invalid"]),
    (401, &["unauthorized"]),
    (402, &["payment_required"]),
    (403, &["forbidden", "queue_limit_reached", "team_suspended"]),
    (404, &["not_found"]),
    (
        409,
        &[
            "conflict",
            "idempotency_conflict",
            "lease_lost",
            "queue_paused",
            "push_enabled",
            "oversized_messages_stored",
        ],
    ),
    (413, &["payload_too_large"]),
    (415, &["unsupported_media_type"]),
    (429, &["rate_limited"]),
    (503, &["service_unavailable", "replication_timeout"]),
    (507, &["storage_limit_reached"]),
];

/// The status that answers `code`; `None` for a code [`ERRORS`] does not list.
pub fn status_of(code: &str) -> Option<u16> {
    ERRORS.iter().find(|(_, codes)| codes.contains(&code)).map(|(status, _)| *status)
}

// Documents the shape `ApiError` writes (`error.rs`); nothing serialises it. Its doc comments are
// the document's text.
/// Every error answer: `{"error", "message"}`, with the fields some codes add.
#[derive(utoipa::ToSchema)]
#[schema(as = Error)]
#[allow(dead_code)]
pub struct ErrorAnswer {
    /// The stable machine-readable code clients switch on.
    #[schema(schema_with = error_code_schema)]
    error: String,
    /// What went wrong, for humans.
    message: String,
    /// The request's id, as in the `x-request-id` header, so the failure can be found in the logs.
    request_id: Option<String>,
    /// The batch entry the error is about (batch publish).
    index: Option<u64>,
    /// `invalid_request` about one field of the body: its name (the message also starts with it).
    field: Option<String>,
    /// `payment_required`: where to add a payment method.
    setup_url: Option<String>,
    /// `oversized_messages_stored`: how many stored messages are larger than the new size.
    count: Option<u64>,
}

fn error_code_schema() -> ObjectBuilder {
    let codes = ERRORS.iter().flat_map(|(_, codes)| codes.iter().copied());
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(codes))
}

/// The responses of an operation that can fail with `codes`: one per status, naming its codes,
/// each with the [`ErrorAnswer`] schema, and the headers that come with 429 and 503. Panics on a
/// code [`ERRORS`] does not list (the document tests build every operation's responses).
pub fn error_responses(codes: &[&str]) -> BTreeMap<String, RefOr<Response>> {
    let mut by_status: BTreeMap<u16, Vec<&str>> = BTreeMap::new();
    for code in codes {
        let status = status_of(code).unwrap_or_else(|| panic!("{code:?} is not an error code of the API"));
        by_status.entry(status).or_default().push(code);
    }
    by_status
        .into_iter()
        .map(|(status, codes)| {
            let names: Vec<String> = codes.iter().map(|c| format!("`{c}`")).collect();
            let mut response = ResponseBuilder::new().description(names.join(", ")).content(
                "application/json",
                ContentBuilder::new().schema(Some(Ref::from_schema_name("Error"))).build(),
            );
            if status == 429 || status == 503 {
                response = response.header("retry-after", integer_header("Seconds to wait before retrying."));
            }
            if status == 429 {
                for (name, what) in [
                    ("ratelimit-limit", "The budget per window: a token's requests, or failed log-ins."),
                    ("ratelimit-remaining", "What is left of it: 0."),
                    ("ratelimit-reset", "Seconds until a request is admitted again."),
                ] {
                    response = response.header(name, integer_header(what));
                }
                let policy = HeaderBuilder::new()
                    .schema(ObjectBuilder::new().schema_type(Type::String))
                    .description(Some("`<limit>;w=<window seconds>`"))
                    .build();
                response = response.header("ratelimit-policy", policy);
            }
            (status.to_string(), response.into())
        })
        .collect()
}

fn integer_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(SchemaType::new(Type::Integer)).minimum(Some(0)))
        .description(Some(description))
        .build()
}

/// Declares a type listing the error responses of one operation, for its `#[utoipa::path]`:
/// `errors!(AckErrors: "invalid_request", "unauthorized");` then `responses((status = 200, …),
/// AckErrors)`.
#[macro_export]
macro_rules! errors {
    ($name:ident: $($code:literal),+ $(,)?) => {
        pub(crate) struct $name;

        impl ::utoipa::IntoResponses for $name {
            fn responses() -> ::std::collections::BTreeMap<
                String,
                ::utoipa::openapi::RefOr<::utoipa::openapi::response::Response>,
            > {
                $crate::openapi::error_responses(&[$($code),+])
            }
        }
    };
}

/// Adds the `Error` schema and a bearer-token security scheme named `scheme` to a document.
pub fn finish(doc: &mut OpenApi, scheme: &str, description: &str, bearer_format: Option<&str>) {
    let components = doc.components.get_or_insert_with(Default::default);
    let name = <ErrorAnswer as utoipa::ToSchema>::name();
    components.schemas.insert(name.into_owned(), error_schema());
    let mut http = Http::new(HttpAuthScheme::Bearer);
    http.bearer_format = bearer_format.map(str::to_owned);
    http.description = Some(description.to_owned());
    components.add_security_scheme(scheme, SecurityScheme::Http(http));
}

fn error_schema() -> RefOr<Schema> {
    <ErrorAnswer as utoipa::PartialSchema>::schema()
}

/// A router that records the path of every route it is given: the paths the document must list.
pub struct Routes<S> {
    router: Router<S>,
    paths: Vec<String>,
}

impl<S: Clone + Send + Sync + 'static> Default for Routes<S> {
    fn default() -> Self {
        Self { router: Router::new(), paths: Vec::new() }
    }
}

impl<S: Clone + Send + Sync + 'static> Routes<S> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn route(mut self, path: &str, method_router: MethodRouter<S>) -> Self {
        self.router = self.router.route(path, method_router);
        self.paths.push(path.to_owned());
        self
    }

    pub fn merge(mut self, other: Routes<S>) -> Self {
        self.router = self.router.merge(other.router);
        self.paths.extend(other.paths);
        self
    }

    /// Changes the router (adds layers) and keeps the paths.
    pub fn map(mut self, change: impl FnOnce(Router<S>) -> Router<S>) -> Self {
        self.router = change(self.router);
        self
    }

    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    pub fn into_router(self) -> Router<S> {
        self.router
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;

    /// Every client-facing `ApiError`, to hold [`ERRORS`] against the statuses and codes it answers.
    fn samples() -> Vec<ApiError> {
        let m = String::new;
        vec![
            ApiError::InvalidRequest(m()),
            ApiError::Unauthorized(m()),
            ApiError::Forbidden(m()),
            ApiError::NotFound(m()),
            ApiError::Conflict(m()),
            ApiError::IdempotencyConflict(m()),
            ApiError::ReceiptInvalid(m()),
            ApiError::LeaseLost(m()),
            ApiError::PayloadTooLarge(m()),
            ApiError::UnsupportedMediaType(m()),
            ApiError::QueuePaused(m()),
            ApiError::PushEnabled(m()),
            ApiError::StorageLimitReached(m()),
            ApiError::QueueLimitReached(m()),
            ApiError::TeamSuspended(m()),
            ApiError::RateLimited { message: m(), retry_after_secs: 1, limit: 1, window_secs: 1 },
            ApiError::ServiceUnavailable { message: m(), retry_after_secs: 1, cause: None },
            ApiError::ReplicationTimeout(m()),
            ApiError::PaymentRequired { message: m(), setup_url: m() },
            ApiError::OversizedMessagesStored { message: m(), count: 1 },
        ]
    }

    #[test]
    fn the_table_agrees_with_the_error_type() {
        let samples = samples();
        for err in &samples {
            assert_eq!(status_of(err.code()), Some(err.status().as_u16()), "{}", err.code());
        }
        let listed: usize = ERRORS.iter().map(|(_, codes)| codes.len()).sum();
        assert_eq!(listed, samples.len(), "every listed code is one the error type answers");
        // A field's error is an `invalid_request` too.
        let field = ApiError::field("name", "too long");
        assert_eq!((field.code(), field.status().as_u16()), ("invalid_request", 400));
    }

    #[test]
    fn responses_group_codes_by_status_with_their_headers() {
        let responses = error_responses(&["invalid_request", "receipt_invalid", "rate_limited"]);
        assert_eq!(responses.keys().collect::<Vec<_>>(), ["400", "429"]);
        let RefOr::T(limited) = &responses["429"] else { panic!("inline") };
        assert!(limited.headers.contains_key("retry-after") && limited.headers.contains_key("ratelimit-policy"));
        let RefOr::T(bad) = &responses["400"] else { panic!("inline") };
        assert_eq!(bad.description, "`invalid_request`, `receipt_invalid`");
    }
}
