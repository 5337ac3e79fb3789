//! A state-changing request runs to its end even when the browser goes away. hyper drops a
//! handler's future when its client closes the connection, and a browser does that when a second
//! click on a submit button replaces the navigation the first click started. Dropped half-way, a
//! form's action could be done (a queue created, its token minted) while its one-time claim
//! (`once`) never learnt where the result is shown, so the second submission could not be sent
//! there and the token's only showing was lost. Every request but a read therefore runs on a task
//! of its own, which a closed connection does not cancel.

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

/// Runs a POST (any method but GET and HEAD) on its own task and waits for its answer.
pub(crate) async fn run_to_the_end(request: Request, next: Next) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    // The task keeps the request's log span (its request id).
    match tokio::spawn(next.run(request).in_current_span()).await {
        Ok(response) => response,
        // A panic stays a panic, as it was before the request moved to a task of its own.
        Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
        // Only a runtime that is shutting down cancels the task.
        Err(_) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}
