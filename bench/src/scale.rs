//! How long and how big each scenario runs: `full` (infra/bench, under 15 minutes), `quick`
//! (`infra/bench --quick`, under 3 minutes) and `smoke` (about a second each, from the
//! end-to-end tests, so the bench cannot rot).

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Scale {
    /// Ramp before each measured window; not counted.
    pub warmup: Duration,
    /// Single publish: the measured time per side, split into `publish_rounds` alternating
    /// floor and AQS windows.
    pub publish: Duration,
    pub publish_rounds: usize,
    pub single_connections: usize,
    /// Open-loop publish latency at half the measured peak.
    pub open_loop: Duration,
    pub batch: Duration,
    pub batch_connections: usize,
    /// Steady consume + ack with a producer keeping depth flat.
    pub consume: Duration,
    pub consumers: usize,
    pub producers: usize,
    pub depth: usize,
    /// Sequential publish → long-poll receive trips.
    pub wakeups: usize,
    /// Ready messages stored to measure memory per message.
    pub memory_messages: usize,
    /// Idle long polls held at once, over `idle_queues` queues, and wake-ups sent to them.
    pub idle_polls: usize,
    pub idle_queues: usize,
    pub idle_wakeups: usize,
    /// Each push window: the handler's floor, message and batch mode draining a filled queue,
    /// message mode and the run with a flaky handler while producers keep `depth` waiting, the
    /// open-loop latency.
    pub push: Duration,
    /// The messages queued before batch mode's lane starts (more than it delivers through its
    /// warm-up and window on this machine), and the most message mode's may hold.
    pub push_drained: usize,
    /// Requests watched with MONITOR to tell client commands from script commands.
    pub calibration_requests: usize,
}

impl Scale {
    pub fn full() -> Self {
        Self {
            warmup: Duration::from_secs(2),
            publish: Duration::from_secs(16),
            publish_rounds: 4,
            single_connections: 64,
            open_loop: Duration::from_secs(15),
            batch: Duration::from_secs(15),
            batch_connections: 8,
            consume: Duration::from_secs(20),
            consumers: 4,
            producers: 3,
            depth: 20_000,
            wakeups: 1000,
            memory_messages: 100_000,
            idle_polls: 10_000,
            idle_queues: 10,
            idle_wakeups: 500,
            push: Duration::from_secs(10),
            push_drained: 2_000_000,
            calibration_requests: 200,
        }
    }

    pub fn quick() -> Self {
        Self {
            warmup: Duration::from_millis(500),
            publish: Duration::from_secs(6),
            publish_rounds: 2,
            open_loop: Duration::from_secs(5),
            batch: Duration::from_secs(5),
            consume: Duration::from_secs(6),
            depth: 10_000,
            wakeups: 200,
            memory_messages: 20_000,
            idle_wakeups: 200,
            push: Duration::from_secs(4),
            push_drained: 1_000_000,
            calibration_requests: 50,
            ..Self::full()
        }
    }

    pub fn smoke() -> Self {
        Self {
            warmup: Duration::from_millis(200),
            publish: Duration::from_secs(1),
            publish_rounds: 1,
            single_connections: 8,
            open_loop: Duration::from_secs(1),
            batch: Duration::from_secs(1),
            batch_connections: 2,
            consume: Duration::from_secs(1),
            consumers: 2,
            producers: 1,
            depth: 500,
            wakeups: 20,
            memory_messages: 1000,
            idle_polls: 200,
            idle_queues: 2,
            idle_wakeups: 20,
            push: Duration::from_secs(1),
            // Deep enough that batch mode does not drain it within the warm-up and leave its
            // window empty, as 20,000 once did against the debug build the tests run.
            push_drained: 200_000,
            calibration_requests: 10,
        }
    }
}
