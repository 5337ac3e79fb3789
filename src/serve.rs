//! `aqs serve`: connects the stores the chosen roles need, builds one router from the roles and
//! serves it until the shutdown signal, which is fanned out to every background loop.

use anyhow::Context;
use aqs_core::ApiError;
use aqs_core::config::{Config, Role};
use aqs_core::redis_conn;
use axum::Router;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub fn init_tracing(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter).unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_target(false).init();
}

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
    let mut redis = redis_conn::connect(&config.redis_urls()).await?;
    let mut app = Router::new();
    let mut background = Vec::new();

    let data_plane = if config.runs(Role::Data) || config.runs(Role::Console) {
        Some(aqs_data_plane::DataPlane::new(&config, redis.clone()).await?)
    } else {
        None
    };
    if config.runs(Role::Data) {
        redis_conn::check_durability(&mut redis).await?;
        let dp = data_plane.clone().expect("built above for the data role");
        background.extend(aqs_data_plane::spawn_background(&dp, cancel.clone()));
        app = app.merge(aqs_data_plane::router(dp));
    }
    if config.runs(Role::Control) || config.runs(Role::Console) {
        let db = connect_postgres(&config).await?;
        let control = aqs_control_plane::ControlPlane::new(&config, db, redis.clone()).await?;
        // The projection is rebuilt at every start so that a Redis that lost it (or missed a
        // change while unreachable) is repaired before we serve.
        control.resync_projection().await.context("re-syncing the Redis projection")?;
        if config.runs(Role::Control) {
            app = app.merge(aqs_control_plane::router(control.clone()));
        }
        if config.runs(Role::Console) {
            let dp = data_plane.clone().expect("built above for the console role");
            app = app.merge(aqs_console::router(&config, control, dp));
        }
    }

    // Unknown paths and methods answer in the API's error format too, not with an empty body.
    let app = app.fallback(|| async { ApiError::not_found("no such route") }).method_not_allowed_fallback(|| async {
        ApiError::MethodNotAllowed("this route does not take that method".into())
    });

    let addr = listener.local_addr()?;
    tracing::info!(%addr, roles = %config.roles, "aqs serving");
    let stop = cancel.clone();
    // into_make_service shares one router among connections; serving the Router itself would
    // copy it for every accepted connection (measured: ~23 KiB each, 10k idle long polls 561 → 309 MiB).
    axum::serve(listener, app.into_make_service())
        .with_graceful_shutdown(async move {
            shutdown.await;
            stop.cancel();
        })
        .await?;
    cancel.cancel();
    for task in background {
        if let Err(err) = task.await {
            tracing::warn!(error = %err, "background task ended abnormally");
        }
    }
    tracing::info!("aqs stopped");
    Ok(())
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
