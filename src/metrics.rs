//! The Prometheus exporter behind `AQS_METRICS_ADDR`: installs the process's `metrics` recorder and
//! serves `GET /metrics` (text exposition format) on a listener of its own, apart from the API's,
//! so that the scrape can be kept on a private address. The series and their names are
//! `aqs_core::metrics` (its header lists them all); without `AQS_METRICS_ADDR` no recorder is
//! installed and nothing is measured.
//!
//! The exporter crate's own HTTP listener is off: ours stops with the process's shutdown signal
//! like every other listener, and refreshes the scrape-time gauges before each render.

use aqs_core::ApiError;
use axum::Router;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use metrics_util::MetricKindMask;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Bucket bounds of every histogram (all are in seconds): from a sub-millisecond script call to a
/// long poll's 20 s and a large re-sync.
const BUCKETS: [f64; 16] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// A gauge not set for this long leaves the scrape: how a queue that is no longer among the
/// deepest drops out (the sweeper sets the per-queue ones about every second, and every other
/// gauge is set at each scrape).
const GAUGE_IDLE: Duration = Duration::from_secs(15);

/// How often recorded histogram samples are folded into their buckets between scrapes, so memory
/// stays flat when nobody scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The process's recorder: one per process (the `metrics` facade has one global recorder), shared
/// by every server the process runs.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets(&BUCKETS)?
        .idle_timeout(MetricKindMask::GAUGE, Some(GAUGE_IDLE))
        .install_recorder()?;
    let handle = HANDLE.get_or_init(|| handle).clone();
    aqs_core::metrics::set_enabled();
    Ok(handle)
}

/// Binds the scrape listener (an address in use fails start-up, as the API's does).
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).await.map_err(|err| anyhow::anyhow!("cannot listen on AQS_METRICS_ADDR {addr}: {err}"))
}

/// Serves `GET /metrics` on `listener` until `shutdown`, and runs the recorder's upkeep meanwhile.
pub fn spawn(listener: TcpListener, handle: PrometheusHandle, shutdown: CancellationToken) -> JoinHandle<()> {
    let upkeep = handle.clone();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(UPKEEP_EVERY);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => upkeep.run_upkeep(),
            }
        }
    });
    let app = Router::new()
        .route("/metrics", get(scrape))
        .fallback(|| async { ApiError::not_found("only /metrics is served here") })
        .with_state(handle);
    tokio::spawn(async move {
        let served = axum::serve(listener, app).with_graceful_shutdown(shutdown.cancelled_owned()).await;
        if let Err(err) = served {
            tracing::error!(error = %err, "the metrics listener failed");
        }
    })
}

async fn scrape(State(handle): State<PrometheusHandle>) -> impl IntoResponse {
    aqs_core::metrics::refresh();
    ([(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], handle.render())
}
