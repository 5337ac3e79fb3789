//! The bound on password hashing: a fixed number of argon2 computations at once, sized from the
//! machine's cores, for log-in, sign-up and password change alike.
//!
//! Each argon2id computation (the crate's default parameters) holds 19 MiB and a core for its
//! duration. Unbounded, 64 log-ins at once took the process from 76 MB to 969 MB resident and
//! starved every other request; the allocator then kept most of it. Here a caller waits up to
//! [`WAIT`] for a slot and is otherwise refused with `503 service_unavailable` and `Retry-After`,
//! so memory stays at about `capacity × 19 MiB` above normal whatever arrives, and a burst is
//! answered quickly (refused) rather than slowly (queued for seconds).

use aqs_core::{ApiError, ApiResult};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// How long a caller may wait for a hashing slot before it is refused: a few hashes' time, long
/// enough that ordinary concurrency (a handful of log-ins) always waits rather than fails.
pub const WAIT: Duration = Duration::from_secs(2);

/// What a refused caller is told to wait before trying again.
const RETRY_AFTER_SECS: u64 = 2;

/// Cheap to clone; one per control plane (so per process in production).
#[derive(Clone)]
pub struct HashPool {
    inner: Arc<Inner>,
}

struct Inner {
    permits: Arc<Semaphore>,
    capacity: usize,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    refused: AtomicU64,
}

/// What the pool has done, for tests and diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashStats {
    /// How many hashes may run at once.
    pub capacity: usize,
    /// How many run now.
    pub in_flight: usize,
    /// The most that ever ran at once.
    pub peak: usize,
    /// How many callers were refused with 503 for want of a slot.
    pub refused: u64,
}

impl HashPool {
    /// A pool of `capacity` slots (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            inner: Arc::new(Inner {
                permits: Arc::new(Semaphore::new(capacity)),
                capacity,
                in_flight: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
                refused: AtomicU64::new(0),
            }),
        }
    }

    /// One slot per core: argon2 is CPU-bound, so more at once only adds memory and latency.
    pub fn sized_from_cores() -> Self {
        Self::new(std::thread::available_parallelism().map_or(2, |n| n.get()))
    }

    pub fn stats(&self) -> HashStats {
        let inner = &self.inner;
        HashStats {
            capacity: inner.capacity,
            in_flight: inner.in_flight.load(Ordering::Relaxed),
            peak: inner.peak.load(Ordering::Relaxed),
            refused: inner.refused.load(Ordering::Relaxed),
        }
    }

    /// Runs `hash` on the blocking pool once a slot is free; 503 when none frees within [`WAIT`].
    pub async fn run<T: Send + 'static>(&self, hash: impl FnOnce() -> T + Send + 'static) -> ApiResult<T> {
        let permit = match tokio::time::timeout(WAIT, self.inner.permits.clone().acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            // The semaphore is never closed; a timeout is the only refusal.
            Ok(Err(_)) | Err(_) => {
                self.inner.refused.fetch_add(1, Ordering::Relaxed);
                return Err(ApiError::ServiceUnavailable {
                    message: "too many password checks at once; try again in a moment".into(),
                    retry_after_secs: RETRY_AFTER_SECS,
                    cause: None,
                });
            }
        };
        let running = self.inner.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.inner.peak.fetch_max(running, Ordering::Relaxed);
        let inner = self.inner.clone();
        // The slot is held until the computation ends, even if the caller went away meanwhile:
        // a dropped request does not stop a blocking task, so its memory is still in use.
        tokio::task::spawn_blocking(move || {
            let out = hash();
            inner.in_flight.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
            out
        })
        .await
        .map_err(|err| ApiError::Internal(anyhow::anyhow!("password hashing task: {err}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn runs_at_most_capacity_at_once_and_refuses_after_the_wait() {
        let pool = HashPool::new(2);
        let slow = || std::thread::sleep(WAIT + Duration::from_millis(500));
        let calls: Vec<_> = (0..4)
            .map(|_| {
                tokio::spawn({
                    let pool = pool.clone();
                    async move { pool.run(slow).await }
                })
            })
            .collect();
        let mut refused = 0;
        for call in calls {
            if let Err(ApiError::ServiceUnavailable { retry_after_secs, .. }) = call.await.unwrap() {
                assert!(retry_after_secs > 0);
                refused += 1;
            }
        }
        let stats = pool.stats();
        assert_eq!((stats.peak, stats.in_flight, stats.refused, refused), (2, 0, 2, 2), "{stats:?}");
    }
}
