//! The AQS data plane: the `/queue/v1` message API on Redis Streams and Lua.
//!
//! - [`router`] serves every route under `/queue/v1`; [`queue_routes`] are the per-queue handlers
//!   alone, written against an extracted [`QueueContext`] so a custom host can serve them at `/`.
//! - [`plain_listener`] keeps custom hosts' names off the plain listener's router (challenges and
//!   redirects only); [`tls_listener`] serves them, by SNI and a matching `Host`; [`tls_server_config`]
//!   is the TLS listener's configuration (certificates by SNI).
//! - [`spawn_background`] starts the sweeper (timers), the publish ledger flusher, the engine's
//!   wake-up subscriber (long polls), the consumers' tallies (`consumers.rs`), the custom hosts'
//!   sync and the push supervisor ([`push`]: one
//!   dispatcher per queue with a push target).
//!
//! It is HTTP over `aqs-engine`: authentication, rate classes, bodies and answers here; every
//! Redis operation, and every long-poll wake-up after a write, in the engine.

mod auth;
mod body;
mod cache;
mod consumers;
pub mod hosts;
mod last_use;
mod ledger_flusher;
mod longpoll;
pub mod push;
mod routes;
mod state;
mod sweeper;

pub use auth::{PinnedQueue, QueueContext};
pub use cache::{CAPACITY as CACHE_CAPACITY, CacheSizes};
pub use hosts::routing::{PlainRouting, ServerName, plain_listener, tls_listener};
pub use hosts::tls::server_config as tls_server_config;
pub use last_use::CAPACITY as LAST_USE_CAPACITY;
pub use routes::{document as openapi_document, queue_routes, router, served_paths};
pub use state::DataPlane;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Starts the background tasks of a data-plane process: the sweeper, the publish ledger flusher,
/// the wake-up subscriber and the push supervisor.
/// Each keeps retrying while Redis is away and ends when `shutdown` is cancelled.
pub fn spawn_background(state: &DataPlane, shutdown: CancellationToken) -> Vec<JoinHandle<()>> {
    if state.shutdown.set(shutdown.clone()).is_err() {
        tracing::warn!("spawn_background called twice; long polls follow the first shutdown signal");
    }
    vec![
        sweeper::spawn(state.clone(), shutdown.clone()),
        ledger_flusher::spawn(state.clone(), shutdown.clone()),
        consumers::spawn(state.clone(), shutdown.clone()),
        state.engine.spawn_wake_subscriber(shutdown.clone()),
        hosts::table::spawn_sync(state, shutdown.clone()),
        push::spawn(state.clone(), shutdown),
    ]
}
