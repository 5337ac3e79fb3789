//! Open-loop publish: requests arrive on a fixed schedule whatever the server does, and latency
//! runs from each request's scheduled time (see `schedule`). A plain thread releases arrivals
//! (its sleep is precise to tens of microseconds; tokio's timer ticks in milliseconds) to the
//! connections, each at most `RELEASE_SLACK` after it fell due.

use crate::client::{Call, Target};
use crate::load::Tally;
use crate::schedule::Schedule;
use hyper::StatusCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How often at most the thread wakes, and so how late it may release an arrival: once for
/// several arrivals when they come faster than this, instead of once for each. The generator runs
/// on the machine it measures: waking for every arrival, at 12,000 a second it took 27–30 µs of CPU
/// per arrival (a third of a core), and 12–14 µs with this slack (2026-12-07, workers that take
/// arrivals and send nothing; `docs/performance.md`). The lateness is charged to the server, as
/// latency runs from the due time: at most this much, and the same for every side measured.
const RELEASE_SLACK: Duration = Duration::from_micros(250);

/// Sends `rate` requests per second for `duration`, spread over one connection per call.
pub async fn run(target: &Target, calls: Vec<Call>, rate: f64, duration: Duration) -> anyhow::Result<Tally> {
    let mut conns = Vec::with_capacity(calls.len());
    for call in calls {
        conns.push((target.connect().await?, call));
    }
    let schedule = Schedule::new(Instant::now() + Duration::from_millis(100), rate, duration);
    let (arrivals, dispatcher) = Arrivals::release(schedule);
    let workers: Vec<_> = conns
        .into_iter()
        .map(|(mut conn, call)| {
            let arrivals = arrivals.clone();
            tokio::spawn(async move {
                let mut tally = Tally::default();
                loop {
                    let Some(due) = arrivals.next().await else { return tally };
                    match conn.send(&call).await {
                        Ok((StatusCode::CREATED, _)) => {
                            tally.ops += 1;
                            tally.msgs += 1;
                            tally.latencies.record(due.elapsed());
                        }
                        Ok((status, body)) => tally.error(format!("{status}: {}", String::from_utf8_lossy(&body))),
                        Err(err) => tally.error(format!("{err:#}")),
                    }
                }
            })
        })
        .collect();
    let mut total = Tally::default();
    for worker in workers {
        total.merge(worker.await?);
    }
    dispatcher.finish()?;
    Ok(total)
}

/// A schedule's arrivals, released by a plain thread when they fall due and taken by whichever
/// worker is free first.
///
/// The thread only advances a count of released arrivals and wakes one waiting worker per
/// arrival; a free worker claims the next released one by bumping a second count. One task
/// wake-up per arrival: with a locked channel instead, each arrival also handed the lock on to the
/// next waiting worker, which cost 1.5–2 µs of CPU more per arrival.
#[derive(Clone)]
pub(crate) struct Arrivals(Arc<Released>);

struct Released {
    schedule: Schedule,
    /// Arrivals that have fallen due.
    released: AtomicU64,
    /// Arrivals a worker has taken.
    claimed: AtomicU64,
    /// Wakes a worker waiting for the next arrival.
    due: Notify,
}

/// The thread that releases the arrivals; finished once the workers have taken them all.
pub(crate) struct Dispatcher(std::thread::JoinHandle<()>);

impl Arrivals {
    pub(crate) fn release(schedule: Schedule) -> (Self, Dispatcher) {
        let shared = Arc::new(Released {
            schedule,
            released: AtomicU64::new(0),
            claimed: AtomicU64::new(0),
            due: Notify::new(),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::spawn(move || dispatch(&shared))
        };
        (Self(shared), Dispatcher(thread))
    }

    /// When the next arrival was due; `None` once the schedule is over and every arrival taken.
    pub(crate) async fn next(&self) -> Option<Instant> {
        let r = &self.0;
        loop {
            // Registered before the counts are read, so a release between the read and the wait
            // still wakes this worker.
            let woken = r.due.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let claimed = r.claimed.load(Ordering::Acquire);
            if claimed >= r.schedule.count() {
                // Pass the wake-up on: another worker may be waiting for the end too.
                r.due.notify_one();
                return None;
            }
            if claimed < r.released.load(Ordering::Acquire) {
                if r.claimed.compare_exchange(claimed, claimed + 1, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                    return Some(r.schedule.due(claimed));
                }
                continue;
            }
            woken.await;
        }
    }
}

impl Dispatcher {
    pub(crate) fn finish(self) -> anyhow::Result<()> {
        self.0.join().map_err(|_| anyhow::anyhow!("open-loop dispatcher panicked"))
    }
}

/// Releases every arrival when it falls due, or at most `RELEASE_SLACK` after when they come
/// faster than that, sleeping in between; at the end wakes every worker still waiting, so each sees
/// the schedule is over.
fn dispatch(r: &Released) {
    let schedule = r.schedule;
    let mut released = 0;
    while released < schedule.count() {
        let woke_at = Instant::now();
        let due_now = schedule.due_by(woke_at);
        if due_now > released {
            r.released.store(due_now, Ordering::Release);
            for _ in released..due_now {
                r.due.notify_one();
            }
            released = due_now;
        }
        if released < schedule.count() {
            // Sparse arrivals are released when due; dense ones a few at a time.
            let wake_at = schedule.due(released).max(woke_at + RELEASE_SLACK);
            std::thread::sleep(wake_at.saturating_duration_since(Instant::now()));
        }
    }
    r.due.notify_waiters();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_arrival_is_taken_once_and_every_worker_ends() {
        let schedule = Schedule::new(Instant::now(), 20_000.0, Duration::from_millis(200));
        let (arrivals, dispatcher) = Arrivals::release(schedule);
        let workers: Vec<_> = (0..8)
            .map(|_| {
                let arrivals = arrivals.clone();
                tokio::spawn(async move {
                    let mut taken = Vec::new();
                    while let Some(due) = arrivals.next().await {
                        assert!(due <= Instant::now(), "an arrival was handed out before it fell due");
                        taken.push(due);
                    }
                    taken
                })
            })
            .collect();
        let mut all = Vec::new();
        for worker in workers {
            all.extend(tokio::time::timeout(Duration::from_secs(5), worker).await.expect("a worker hung").unwrap());
        }
        dispatcher.finish().unwrap();
        all.sort();
        let expected: Vec<_> = (0..schedule.count()).map(|i| schedule.due(i)).collect();
        assert_eq!(all, expected);
    }
}
