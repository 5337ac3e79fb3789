//! Open-loop publish: requests arrive on a fixed schedule whatever the server does, and latency
//! runs from each request's scheduled time (see `schedule`). A plain thread releases arrivals
//! (its sleep is precise to tens of microseconds; tokio's timer ticks in milliseconds) into a
//! queue that the connections take from.

use crate::client::{Call, Target};
use crate::load::Tally;
use crate::schedule::Schedule;
use hyper::StatusCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, mpsc};

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
#[derive(Clone)]
pub(crate) struct Arrivals(Arc<Mutex<mpsc::UnboundedReceiver<Instant>>>);

/// The thread that releases the arrivals; finished once the workers have taken them all.
pub(crate) struct Dispatcher(std::thread::JoinHandle<()>);

impl Arrivals {
    pub(crate) fn release(schedule: Schedule) -> (Self, Dispatcher) {
        let (tx, rx) = mpsc::unbounded_channel();
        let thread = std::thread::spawn(move || dispatch(schedule, tx));
        (Self(Arc::new(Mutex::new(rx))), Dispatcher(thread))
    }

    /// When the next arrival was due; `None` once the schedule is over and every arrival taken.
    pub(crate) async fn next(&self) -> Option<Instant> {
        self.0.lock().await.recv().await
    }
}

impl Dispatcher {
    pub(crate) fn finish(self) -> anyhow::Result<()> {
        self.0.join().map_err(|_| anyhow::anyhow!("open-loop dispatcher panicked"))
    }
}

/// Releases every arrival when it falls due, sleeping in between.
fn dispatch(schedule: Schedule, tx: mpsc::UnboundedSender<Instant>) {
    let mut released = 0;
    while released < schedule.count() {
        let due_now = schedule.due_by(Instant::now());
        for i in released..due_now {
            if tx.send(schedule.due(i)).is_err() {
                return;
            }
        }
        released = due_now;
        if released < schedule.count() {
            std::thread::sleep(schedule.due(released).saturating_duration_since(Instant::now()));
        }
    }
}
