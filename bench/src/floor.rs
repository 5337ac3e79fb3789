//! The floor: the least a publish over HTTP can cost here. A bare axum route that parses the same
//! JSON body as AQS's publish and runs one EVALSHA of a minimal XADD script, on the same kind of
//! multiplexed Redis connection as AQS. AQS's single publish is compared with it in the same run,
//! so the ratio says what AQS's own work (auth, validation, a richer script) costs.
//!
//! The route has AQS's path shape (`POST /queue/v1/{slug}/messages`) so the bench drives both
//! with the same client and the same request bytes.

use anyhow::Context;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use redis::IntoConnectionInfo;
use redis::aio::ConnectionManager;
use redis::io::tcp::TcpSettings;
use serde::Deserialize;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// KEYS[1] the stream; ARGV[1] the body. Returns the stream id.
const XADD_LUA: &str = "return redis.call('XADD', KEYS[1], '*', 'b', ARGV[1])";

struct Floor {
    redis: ConnectionManager,
    script: redis::Script,
}

#[derive(Deserialize)]
struct Publish {
    body: String,
}

/// Serves the floor on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    redis_url: &str,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // TCP_NODELAY, as AQS's own connections (`aqs_core::redis_conn::tcp_settings`).
    let info = redis_url.into_connection_info().context("bad Redis URL")?;
    let client = redis::Client::open(info.set_tcp_settings(TcpSettings::default().set_nodelay(true)))?;
    let redis = ConnectionManager::new(client).await.context("cannot connect to Redis")?;
    let state = Arc::new(Floor { redis, script: redis::Script::new(XADD_LUA) });
    let app = Router::new().route("/queue/v1/{slug}/messages", post(publish)).with_state(state);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await.context("floor server failed")
}

async fn publish(State(floor): State<Arc<Floor>>, Path(slug): Path<String>, Json(msg): Json<Publish>) -> Response {
    let mut conn = floor.redis.clone();
    // `Script::invoke_async` sends EVALSHA and loads the script only if Redis lacks it.
    let added: redis::RedisResult<String> =
        floor.script.key(format!("bench:floor:{{{slug}}}")).arg(msg.body).invoke_async(&mut conn).await;
    match added {
        Ok(id) => (StatusCode::CREATED, Json(serde_json::json!({ "id": id }))).into_response(),
        Err(err) => (StatusCode::SERVICE_UNAVAILABLE, err.to_string()).into_response(),
    }
}
