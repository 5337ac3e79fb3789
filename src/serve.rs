//! `aqs serve`: connects the stores the chosen roles need, builds one router from the roles and
//! serves it until the shutdown signal, which is fanned out to every background loop.

use crate::health::Health;
use anyhow::Context;
use aqs_core::ApiError;
use aqs_core::config::{Config, Role};
use aqs_core::metrics::http::HttpMetricsLayer;
use aqs_core::redis_conn::{self, RedisOptions};
use aqs_core::redis_probe::{self, RedisState};
use axum::Router;
use axum::handler::Handler;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::util::Either;

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
/// How long start-up waits for Redis to say whether it is a primary.
const STARTUP_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

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
    if let Some(addr) = config.metrics_addr {
        let listener = crate::metrics::bind(addr).await?;
        let handle = crate::metrics::install()?;
        tracing::info!(addr = %listener.local_addr()?, "metrics at /metrics");
        background.push(crate::metrics::spawn(listener, handle, cancel.clone()));
    }
    let mut redis = redis_conn::open(&RedisOptions::from_config(&config)).await?;
    // Every role writes to Redis (the control role its projection): a replica would refuse each.
    if let RedisState::ReadOnly(why) = redis_probe::probe(&redis, STARTUP_PROBE_TIMEOUT).await {
        anyhow::bail!("{why}: AQS needs the primary (point AQS_REDIS_URL at it, or use AQS_REDIS_SENTINELS)");
    }
    // One engine for the whole process, handed to every role: one replica id, one ledger of
    // storage leases, one set of scripts, one replica-ack group per primary and one set of long-poll
    // waiters, so a publish from any role wakes the polls the data role holds.
    let engine = aqs_engine::Engine::from_config(redis.clone(), &config);
    let mut app = Router::new();
    let mut control_plane = None;

    let data_plane = if config.runs(Role::Data) {
        redis_conn::check_durability(&mut redis).await?;
        engine.load_scripts().await?;
        let dp = aqs_data_plane::DataPlane::new(&config, engine.clone());
        background.extend(aqs_data_plane::spawn_background(&dp, cancel.clone()));
        Some(dp)
    } else {
        None
    };
    if config.runs(Role::Control) || config.runs(Role::Console) {
        let db = postgres_pool(&config)?;
        let control = aqs_control_plane::ControlPlane::new(&config, db, engine.clone()).await?;
        control.check_billing_mode().await?;
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
            // The console reads and writes messages through the engine alone: no data plane.
            app = app.merge(aqs_console::router(&config, control, engine.clone()));
        }
    }

    let health = Health::new(config.roles.as_slice(), redis.clone(), control_plane);
    let app = app.merge(health.router());

    // The data plane's routes come measured (its queue routes by their own layers): merged after.
    let data_routes = data_plane.as_ref().map_or_else(Router::new, |dp| aqs_data_plane::router(dp.clone()));
    // Unknown paths and methods answer in the API's error format too, not with an empty body.
    let app = aqs_core::metrics::http::measured(app)
        .merge(data_routes)
        .fallback((|| async { ApiError::not_found("no such route") }).layer(HttpMetricsLayer))
        .method_not_allowed_fallback(|| async {
            ApiError::MethodNotAllowed("this route does not take that method".into())
        });

    // Custom hosts are served on the TLS listener only; the plain one answers their ACME
    // challenges and redirects the rest of their requests to it.
    let app = match &data_plane {
        Some(dp) if config.runs(Role::Data) => Either::Left(aqs_data_plane::plain_listener(app, dp.clone())),
        _ => Either::Right(app),
    };
    if let (Some(https_addr), Some(dp)) = (config.https_addr, &data_plane)
        && config.runs(Role::Data)
    {
        let tls = tokio::net::TcpListener::bind(https_addr)
            .await
            .with_context(|| format!("cannot listen on AQS_HTTPS_ADDR {https_addr}"))?;
        tracing::info!(addr = %https_addr, "aqs serving custom hosts over TLS");
        let config = aqs_data_plane::tls_server_config(dp)?;
        let routes = aqs_data_plane::tls_listener(dp.clone());
        background.push(tokio::spawn(crate::serve_tls::serve_https(tls, config, routes, cancel.clone())));
    }

    let addr = listener.local_addr()?;
    tracing::info!(%addr, roles = %config.roles, "aqs serving");
    let shutdown = drain_first(shutdown, health, Duration::from_secs(config.shutdown_drain_seconds));
    aqs_http::serve_http(listener, app, shutdown, cancel.clone()).await;
    cancel.cancel();
    for task in background {
        if let Err(err) = task.await {
            tracing::warn!(error = %err, "background task ended abnormally");
        }
    }
    // Publishes answered during the shutdown grace came after the flusher stopped; the storage
    // leases go back now rather than expire.
    if data_plane.is_some()
        && let Err(err) = engine.flush_ledger(true).await
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
