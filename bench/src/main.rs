//! The `aqs-bench` command: `floor` serves the floor route for a run; `handler` serves the lean
//! push handler (for BullMQ's push worker); `run` measures every scenario against a running
//! service and prints the table, then one JSON line per result. `infra/bench` starts the service,
//! the floor, the handler and BullMQ and calls `run`.

use anyhow::Context;
use aqs_bench::{BullmqResults, Options, Scale, table};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "aqs-bench", about = "AQS load generator and comparisons")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the floor: a bare axum publish route doing one EVALSHA of a minimal XADD script.
    Floor {
        #[arg(long)]
        listen: String,
        #[arg(long)]
        redis: String,
    },
    /// Serve the lean push handler: `POST /<lane>` answers 200 at once (500 to one request in ten
    /// on a lane named `flaky…`).
    Handler {
        #[arg(long)]
        listen: String,
    },
    /// What the end-to-end tests run (`aqs_bench::smoke`): every scenario but BullMQ for about a
    /// second, with an in-process floor and private RabbitMQ and NATS servers; fails if any
    /// scenario could not run.
    Smoke {
        #[arg(long)]
        url: String,
        #[arg(long)]
        redis: String,
        #[arg(long)]
        aqs_pid: u32,
    },
    /// Run every scenario against a running AQS.
    Run {
        /// The AQS base URL, e.g. http://127.0.0.1:8080.
        #[arg(long)]
        url: String,
        #[arg(long)]
        redis: String,
        /// The aqs process id, for its resident memory.
        #[arg(long)]
        aqs_pid: Option<u32>,
        /// The floor's base URL (from `aqs-bench floor`).
        #[arg(long)]
        floor_url: Option<String>,
        /// A file holding the JSON lines bench.mjs printed.
        #[arg(long)]
        bullmq: Option<std::path::PathBuf>,
        /// Shorter runs (infra/bench --quick).
        #[arg(long, conflicts_with = "smoke")]
        quick: bool,
        /// About a second per scenario.
        #[arg(long)]
        smoke: bool,
        /// Run only these scenario groups (comma-separated): publish_single, publish_batch,
        /// consume_ack, wakeup, end_to_end, memory, idle_polls, replica_acks, push, rabbitmq, nats (a peer group also
        /// runs the AQS groups it is compared with).
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// A data-plane `aqs` with AQS_REDIS_REPLICA_ACKS=1 on the same Redis (replica_acks).
        #[arg(long, requires = "replica_redis")]
        acks_url: Option<String>,
        /// That process's pid: replica_acks stops it when done, so that it takes no part in the
        /// later groups (its push dispatchers would lease messages it cannot confirm).
        #[arg(long, requires = "acks_url")]
        acks_pid: Option<u32>,
        /// An empty Redis that replica_acks attaches as a replica of --redis for its windows.
        #[arg(long, requires = "acks_url")]
        replica_redis: Option<String>,
        /// Tokio worker threads of the load generator; it shares the machine with the server.
        #[arg(long, default_value_t = 2)]
        client_threads: usize,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Floor { listen, redis } => {
            // The floor gets the same runtime as `aqs serve` (#[tokio::main]: one worker per core).
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            runtime.block_on(async {
                let listener = tokio::net::TcpListener::bind(&listen)
                    .await
                    .with_context(|| format!("cannot listen on {listen}"))?;
                aqs_bench::floor::serve(listener, &redis, async {
                    tokio::signal::ctrl_c().await.ok();
                })
                .await
            })
        }
        Command::Handler { listen } => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            runtime.block_on(async {
                let listener = tokio::net::TcpListener::bind(&listen)
                    .await
                    .with_context(|| format!("cannot listen on {listen}"))?;
                aqs_bench::handler::serve(listener, aqs_bench::handler::Counters::default(), async {
                    tokio::signal::ctrl_c().await.ok();
                })
                .await
            })
        }
        Command::Smoke { url, redis, aqs_pid } => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let results = runtime.block_on(aqs_bench::smoke(&url, &redis, aqs_pid))?;
            println!("{}", table::render(&results));
            Ok(())
        }
        Command::Run {
            url,
            redis,
            aqs_pid,
            floor_url,
            bullmq,
            quick,
            smoke,
            only,
            acks_url,
            acks_pid,
            replica_redis,
            client_threads,
        } => {
            let bullmq = match bullmq {
                Some(path) => Some(BullmqResults::parse(
                    &std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?,
                )),
                None => None,
            };
            let scale = if smoke {
                Scale::smoke()
            } else if quick {
                Scale::quick()
            } else {
                Scale::full()
            };
            let options = Options {
                base_url: url,
                redis_url: redis,
                aqs_pid,
                floor_url,
                bullmq,
                scale,
                only,
                acks_url,
                acks_pid,
                replica_redis_url: replica_redis,
            };
            let runtime =
                tokio::runtime::Builder::new_multi_thread().worker_threads(client_threads).enable_all().build()?;
            let results = runtime.block_on(aqs_bench::run(&options))?;
            println!("{}", table::render(&results));
            for r in &results {
                println!("{}", r.json_line());
            }
            Ok(())
        }
    }
}
