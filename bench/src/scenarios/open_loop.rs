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
    let (tx, rx) = mpsc::unbounded_channel::<Instant>();
    let dispatcher = std::thread::spawn(move || dispatch(schedule, tx));
    let arrivals = Arc::new(Mutex::new(rx));
    let workers: Vec<_> = conns
        .into_iter()
        .map(|(mut conn, call)| {
            let arrivals = arrivals.clone();
            tokio::spawn(async move {
                let mut tally = Tally::default();
                loop {
                    let Some(due) = arrivals.lock().await.recv().await else { return tally };
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
    dispatcher.join().map_err(|_| anyhow::anyhow!("open-loop dispatcher panicked"))?;
    Ok(total)
}

/// Releases every arrival when it falls due, sleeping in between.
pub(crate) fn dispatch(schedule: Schedule, tx: mpsc::UnboundedSender<Instant>) {
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
