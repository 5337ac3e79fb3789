//! Every benchmark scenario for about a second against the real binary, RabbitMQ and NATS
//! JetStream included (each on a private server the bench starts and stops), so `infra/bench`
//! cannot rot. It checks that each scenario ran and measured something, never how fast: timings on a
//! shared machine are noise, and speed targets live in `infra/bench`.

use crate::harness::{Redis, Server, fresh_database};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bench_scenario_runs_against_the_service() {
    let redis = Redis::start("everysec");
    // The push scenarios deliver to a handler on loopback, set up by the bench's operator.
    let env =
        [("AQS_PUSH_ALLOW_PRIVATE_NETWORKS", "true"), ("AQS_OPERATOR_EMAILS", aqs_bench::push_api::OPERATOR_EMAIL)];
    let server = Server::start_with_env(&fresh_database().await, &redis.url(), &aqs_testkit::namespace(), &env).await;
    let results = aqs_bench::smoke(&server.base(), &redis.url(), server.pid()).await.expect("the bench runs");
    let names: Vec<&str> = results.iter().map(|r| r.scenario.as_str()).collect();
    for expected in [
        "publish_single",
        "publish_batch_100",
        "consume_ack_100",
        "long_poll_wakeup",
        "memory_per_message",
        "idle_long_polls_held",
        "publish_single_open_loop",
        "end_to_end",
        "push_message_100",
        "push_message_100_vs_bullmq",
        "push_message_100_with_producers",
        "push_batch_100",
        "push_latency",
        "push_latency_at_half_kept_full",
        "push_retry_first_deliveries",
        "push_retry_retries",
    ] {
        assert!(names.contains(&expected), "scenario {expected} missing from {names:?}");
    }
    // A row per peer and compared scenario, each with both sides' figures.
    for peer in ["rabbitmq", "jetstream"] {
        for scenario in
            ["publish_single", "publish_batch_100", "consume_ack_100", "end_to_end_p99", "memory_per_message"]
        {
            let expected = format!("{scenario}_vs_{peer}");
            let row = results.iter().find(|r| r.scenario == expected);
            let row = row.unwrap_or_else(|| panic!("row {expected} missing from {names:?}"));
            assert!(row.baseline_value.is_some(), "{expected} has no {peer} figure: {row:?}");
        }
    }
    // Each group that ran says what the machine did meanwhile: stolen CPU time, and Redis's
    // stalls. `replica_acks` needs a second process and a replica, which the smoke run has not.
    for group in aqs_bench::GROUPS.iter().filter(|group| **group != "replica_acks") {
        let expected = format!("{group}_cpu_stolen");
        let row = results.iter().find(|r| r.scenario == expected);
        let row = row.unwrap_or_else(|| panic!("row {expected} missing from {names:?}"));
        assert!(
            row.note.contains("Redis stalls of 5 ms or more: ") && !row.note.contains("unread"),
            "{expected} does not read Redis's stalls: {row:?}"
        );
        assert!(row.note.contains("a fixed CPU job took "), "{expected} does not time the core: {row:?}");
    }
    let p50 = results.iter().find(|r| r.scenario == "end_to_end_p50_vs_jetstream");
    assert!(p50.is_some_and(|r| r.baseline_value.is_some()), "no end-to-end p50 beside JetStream's: {p50:?}");
    for result in &results {
        assert!(result.error.is_none(), "{} failed: {:?}", result.scenario, result.error);
        assert!(
            result.aqs.is_some_and(|v| v.is_finite() && v >= 0.0),
            "{} measured nothing: {result:?}",
            result.scenario
        );
    }
}
