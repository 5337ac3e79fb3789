//! The HTTP/1.1 server every listener runs: one task per connection driving hyper directly, each
//! request given its id (`request_id`) and hyper's own framing errors answered in the API's JSON
//! format (`framing`).

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::{Service, ServiceExt};

/// How long connections still serving a request may take to finish once shutdown begins. Held long
/// polls answer at once on shutdown, so this only bounds slow uploads and stuck clients.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The HTTP/1.1 server: one task per connection, each driving hyper directly with one router shared
/// by every connection (an `Arc` clone per connection, no per-connection copy of the routes).
/// When `shutdown` resolves it cancels `cancel`, stops accepting, asks each connection to close
/// after its current response, and waits up to [`SHUTDOWN_GRACE`] for them.
///
/// Replaces `axum::serve` (its connection builder, watch channels and select per connection): with
/// 10,000 idle long polls the process held 230 MiB instead of 305 MiB. What a held poll still costs
/// is mostly hyper's 8 KiB read and 8 KiB write buffers (`docs/performance.md` has the rest).
///
/// `app` is the router, or a service in front of it (the plain listener's host routing): served
/// as it is rather than as a router's fallback, whose future axum would box once more per request.
pub async fn serve_http<S>(
    listener: TcpListener,
    app: S,
    shutdown: impl Future<Output = ()> + Send + 'static,
    cancel: CancellationToken,
) where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
{
    let http = hyper::server::conn::http1::Builder::new();
    let tracker = TaskTracker::new();
    let closing = Arc::new(Notify::new());
    let stop = cancel.clone();
    tokio::spawn(async move {
        shutdown.await;
        stop.cancel();
    });
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = cancel.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                accept_error(err).await;
                continue;
            }
        };
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(error = %err, "cannot set TCP_NODELAY");
        }
        // The peer address goes with every request (`ConnectInfo`): log-in throttling counts by it.
        let service = with_peer(&app, peer).map_request(with_body as fn(_) -> _);
        let service = TowerToHyperService::new(crate::request_id::RequestId::new(service));
        // hyper's own answers to malformed framing get our JSON error body (`framing`).
        let stream = crate::framing::JsonFramingErrors::new(stream);
        // Pinned on the heap before the task takes it: pinned inside the task, it would be held
        // twice there (where it was moved in and where it is pinned) for the connection's life.
        let mut conn = Box::pin(http.serve_connection(TokioIo::new(stream), service).with_upgrades());
        let (cancel, closing) = (cancel.clone(), closing.clone());
        tracker.spawn(async move {
            // A plain Notify rather than `cancel.cancelled()`: this branch is polled at every wake-up
            // of the connection; the token's future takes two locks per poll, a Notify one.
            let closing = closing.notified();
            tokio::pin!(closing);
            closing.as_mut().enable();
            // Registered now: a shutdown from here on wakes us; one from before is seen here.
            if cancel.is_cancelled() {
                conn.as_mut().graceful_shutdown();
            }
            let result = tokio::select! {
                result = conn.as_mut() => result,
                () = closing => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(err) = result {
                tracing::trace!(error = %err, "connection ended with an error");
            }
        });
    }
    drop(listener);
    closing.notify_waiters();
    tracker.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait()).await.is_err() {
        tracing::warn!(open = tracker.len(), "connections still open after the shutdown grace period; closing them");
    }
}

/// `app` with the connection's peer address in each request's extensions, where axum's
/// `ConnectInfo<SocketAddr>` extractor finds it.
pub fn with_peer<S: Clone>(
    app: &S,
    peer: std::net::SocketAddr,
) -> axum::middleware::AddExtension<S, axum::extract::ConnectInfo<std::net::SocketAddr>> {
    tower::Layer::layer(&axum::Extension(axum::extract::ConnectInfo(peer)), app.clone())
}

/// hyper's request with axum's body type, as a router would convert it.
fn with_body(request: hyper::Request<hyper::body::Incoming>) -> Request {
    request.map(Body::new)
}

/// A failed accept: a connection that went away before we took it is skipped; anything else
/// (out of file descriptors, most likely) is logged and retried after a pause, as `axum::serve` did.
async fn accept_error(err: std::io::Error) {
    use std::io::ErrorKind;
    if matches!(err.kind(), ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset) {
        return;
    }
    tracing::error!(error = %err, "accept failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
