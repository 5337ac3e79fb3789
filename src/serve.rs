//! `aqs serve`: connects the stores the chosen roles need, builds one router from the roles and
//! serves it until the shutdown signal, which is fanned out to every background loop.

use crate::health::Health;
use anyhow::Context;
use aqs_core::ApiError;
use aqs_core::config::{Config, Role};
use aqs_core::metrics::http::HttpMetricsLayer;
use aqs_core::redis_conn::{self, RedisOptions};
use axum::Router;
use axum::handler::Handler;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Logs to standard output with `filter` (`AQS_LOG`, refused when it does not parse), coloured
/// only on a terminal and without `NO_COLOR`, so that a log file or journal gets plain text.
pub fn init_tracing(filter: &str) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::builder()
        .parse(filter)
        .map_err(|err| anyhow::anyhow!("invalid setting AQS_LOG {filter:?}: {err}"))?;
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_ansi(colour).init();
    Ok(())
}

/// How long a request waits for a PostgreSQL connection before its 503: short, so that an outage
/// the probe has not seen yet costs a request little (`aqs_control_plane::PROBE_EVERY`).
const SERVE_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);

/// The serving pool, built without connecting: a process whose database is down still starts and
/// serves what needs only Redis; `ControlPlane::watch_database` finds out when it is back.
fn postgres_pool(config: &Config) -> anyhow::Result<sqlx::PgPool> {
    if config.database_url.is_empty() {
        anyhow::bail!("AQS_DATABASE_URL is not set");
    }
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(SERVE_ACQUIRE_TIMEOUT)
        .connect_lazy(config.database_url.expose())
        .context("AQS_DATABASE_URL is not a valid PostgreSQL URL")
}

/// A connected pool, for the one-shot commands (`migrate`, `admin`), which need the database now.
pub async fn connect_postgres(config: &Config) -> anyhow::Result<sqlx::PgPool> {
    if config.database_url.is_empty() {
        anyhow::bail!("AQS_DATABASE_URL is not set");
    }
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(5))
        .connect(config.database_url.expose())
        .await
        .context("cannot connect to PostgreSQL (AQS_DATABASE_URL)")
}

/// Serves the configured roles on `listener` until `shutdown` resolves.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let cancel = CancellationToken::new();
    let mut background = Vec::new();
    // Installed before anything is built: the routers and loops below measure only if it is.
    if let Some(addr) = config.metrics_addr()? {
        let listener = crate::metrics::bind(addr).await?;
        let handle = crate::metrics::install()?;
        tracing::info!(addr = %listener.local_addr()?, "metrics at /metrics");
        background.push(crate::metrics::spawn(listener, handle, cancel.clone()));
    }
    let mut redis = redis_conn::open(&RedisOptions::from_config(&config)).await?;
    let mut app = Router::new();
    let mut control_plane = None;

    let data_plane = if config.runs(Role::Data) {
        redis_conn::check_durability(&mut redis).await?;
        let dp = aqs_data_plane::DataPlane::new(&config, redis.clone()).await?;
        background.extend(aqs_data_plane::spawn_background(&dp, cancel.clone()));
        app = app.merge(aqs_data_plane::router(dp.clone()));
        Some(dp)
    } else {
        None
    };
    if config.runs(Role::Control) || config.runs(Role::Console) {
        let db = postgres_pool(&config)?;
        let control = aqs_control_plane::ControlPlane::new(&config, db, redis.clone()).await?;
        // PostgreSQL is looked at once, not waited for: if it is down, its routes answer 503 until
        // the watcher reaches it. The control role rebuilds the projection before serving them, so
        // that a Redis that lost it (or missed a change while unreachable) is repaired first.
        background.push(control.watch_database(config.runs(Role::Control), cancel.clone()).await);
        control_plane = Some(control.clone());
        if config.runs(Role::Control) {
            background.extend(aqs_control_plane::spawn_background(&control, cancel.clone()));
            app = app.merge(aqs_control_plane::router(control.clone()));
            background.push(control.spawn_host_reconciler(cancel.clone()));
        }
        if config.runs(Role::Console) {
            // The console reads messages through the engine alone: no data plane of its own.
            let engine = match &data_plane {
                Some(dp) => dp.engine.clone(),
                None => aqs_data_plane::engine::Engine::from_config(redis.clone(), &config),
            };
            app = app.merge(aqs_console::router(&config, control, engine));
        }
    }

    let health = Health::new(&config.roles()?, redis.clone(), control_plane);
    let app = app.merge(health.router());

    // Unknown paths and methods answer in the API's error format too, not with an empty body.
    let app = aqs_core::metrics::http::measured(app)
        .fallback((|| async { ApiError::not_found("no such route") }).layer(HttpMetricsLayer))
        .method_not_allowed_fallback(|| async {
            ApiError::MethodNotAllowed("this route does not take that method".into())
        });

    // Custom hosts are routed by `Host` on every listener of a data-plane process.
    let app = match &data_plane {
        Some(dp) if config.runs(Role::Data) => aqs_data_plane::route_by_host(app, dp.clone()),
        _ => app,
    };
    if let (Some(https_addr), Some(dp)) = (config.https_addr()?, &data_plane)
        && config.runs(Role::Data)
    {
        let tls = tokio::net::TcpListener::bind(https_addr)
            .await
            .with_context(|| format!("cannot listen on AQS_HTTPS_ADDR {https_addr}"))?;
        tracing::info!(addr = %https_addr, "aqs serving custom hosts over TLS");
        let config = aqs_data_plane::tls_server_config(dp)?;
        background.push(tokio::spawn(crate::serve_tls::serve_https(tls, config, app.clone(), cancel.clone())));
    }

    let addr = listener.local_addr()?;
    tracing::info!(%addr, roles = %config.roles, "aqs serving");
    let shutdown = drain_first(shutdown, health, Duration::from_secs(config.shutdown_drain_seconds));
    serve_http(listener, app, shutdown, cancel.clone()).await;
    cancel.cancel();
    for task in background {
        if let Err(err) = task.await {
            tracing::warn!(error = %err, "background task ended abnormally");
        }
    }
    // Publishes answered during the shutdown grace came after the flusher stopped; the storage
    // leases go back now rather than expire.
    if let Some(dp) = &data_plane
        && let Err(err) = dp.engine.flush_ledger(true).await
    {
        tracing::warn!(error = %err, "could not write the last of the publish ledger");
    }
    tracing::info!("aqs stopped");
    Ok(())
}

/// `shutdown`, then `drain` with `/readyz` answering 503 while every request is still served, so
/// that a load balancer checking it stops sending here before the listeners close.
async fn drain_first(shutdown: impl Future<Output = ()> + Send + 'static, health: Health, drain: Duration) {
    shutdown.await;
    health.start_draining();
    if !drain.is_zero() {
        tracing::info!(seconds = drain.as_secs(), "draining: /readyz answers 503 until the listeners close");
        tokio::time::sleep(drain).await;
    }
}

/// How long connections still serving a request may take to finish once shutdown begins. Held long
/// polls answer at once on shutdown, so this only bounds slow uploads and stuck clients.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The HTTP/1.1 server: one task per connection, each driving hyper directly with one router shared
/// by every connection (an `Arc` clone per connection, no per-connection copy of the routes).
/// When `shutdown` resolves it cancels `cancel`, stops accepting, asks each connection to close
/// after its current response, and waits up to [`SHUTDOWN_GRACE`] for them.
///
/// Replaces `axum::serve` (its connection builder, watch channels and select per connection): with
/// 10,000 idle long polls the process held 230 MiB instead of 305 MiB. What a held poll still costs
/// is mostly hyper's 8 KiB read and 8 KiB write buffers, the task and the request's future.
pub async fn serve_http(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    cancel: CancellationToken,
) {
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
        let service = TowerToHyperService::new(crate::request_id::RequestId::new(with_peer(&app, peer)));
        // hyper's own answers to malformed framing get our JSON error body (`framing`).
        let stream = crate::framing::JsonFramingErrors::new(stream);
        let conn = http.serve_connection(TokioIo::new(stream), service).with_upgrades();
        let (cancel, closing) = (cancel.clone(), closing.clone());
        tracker.spawn(async move {
            // A plain Notify rather than `cancel.cancelled()`: this branch is polled at every wake-up
            // of the connection; the token's future takes two locks per poll, a Notify one.
            let closing = closing.notified();
            tokio::pin!(conn, closing);
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
pub(crate) fn with_peer(
    app: &Router,
    peer: std::net::SocketAddr,
) -> axum::middleware::AddExtension<Router, axum::extract::ConnectInfo<std::net::SocketAddr>> {
    tower::Layer::layer(&axum::Extension(axum::extract::ConnectInfo(peer)), app.clone())
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

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
