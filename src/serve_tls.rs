//! The optional TLS listener (`AQS_HTTPS_ADDR`) for custom hosts: TLS by rustls with the data
//! plane's SNI certificate resolver, then the data plane's custom-host router, which gets the
//! connection's SNI name on every request (`ServerName`) and serves only a `Host` that matches it. One task per connection, like the plain listener; on shutdown it stops accepting and
//! asks each connection to close after its current response.

use aqs_data_plane::ServerName;
use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A client that connects and never finishes its handshake is dropped after this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

pub async fn serve_https(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    app: Router,
    cancel: CancellationToken,
) {
    let acceptor = TlsAcceptor::from(config);
    let http = hyper::server::conn::http1::Builder::new();
    let tracker = TaskTracker::new();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!(error = %err, "TLS accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = cancel.cancelled() => break,
        };
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(error = %err, "cannot set TCP_NODELAY");
        }
        let (acceptor, http, app, cancel) = (acceptor.clone(), http.clone(), app.clone(), cancel.clone());
        tracker.spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(err)) => {
                    tracing::debug!(error = %err, "TLS handshake failed");
                    return;
                }
                Err(_) => return,
            };
            let sni = ServerName(tls.get_ref().1.server_name().map(str::to_owned));
            // The same request ids and framing answers as the plain listener (`serve::serve_http`).
            let tls = aqs_http::framing::JsonFramingErrors::new(tls);
            let app = tower::Layer::layer(&axum::Extension(sni), aqs_http::with_peer(&app, peer));
            let service = TowerToHyperService::new(aqs_http::request_id::RequestId::new(app));
            let conn = http.serve_connection(TokioIo::new(tls), service).with_upgrades();
            tokio::pin!(conn);
            let result = tokio::select! {
                result = conn.as_mut() => result,
                () = cancel.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(err) = result {
                tracing::trace!(error = %err, "TLS connection ended with an error");
            }
        });
    }
    drop(listener);
    tracker.close();
    if tokio::time::timeout(aqs_http::SHUTDOWN_GRACE, tracker.wait()).await.is_err() {
        tracing::warn!(open = tracker.len(), "TLS connections still open after the shutdown grace period");
    }
}
