//! Replica acknowledgements against a real primary and replica: a write is confirmed once the
//! replica has it, refused (`replication_timeout`) when the replica does not confirm in time, and
//! a write waiting for the replica holds up no other command of the process.

use crate::failover::{in_sync, put_to_sleep_for, replication_lag, test_settings};
use crate::harness::Redis;
use aqs_core::config::Config;
use aqs_engine::{Engine, StorageError};
use std::time::{Duration, Instant};

/// A primary, its replica in sync, and an engine on the primary whose writes wait for one replica
/// for up to `timeout`.
async fn primary_with_replica(timeout: Duration) -> (Redis, Redis, Engine) {
    let primary = Redis::start_with("everysec", &test_settings());
    let replica = Redis::start_with("everysec", &test_settings());
    let mut conn = redis::Client::open(replica.url()).unwrap().get_connection().unwrap();
    redis::cmd("REPLICAOF").arg("127.0.0.1").arg(primary.port).query::<()>(&mut conn).unwrap();
    crate::failover::until("the replica is in sync", Duration::from_secs(20), || in_sync(&replica)).await;
    let mut config = Config::for_tests("", &primary.url(), "tacks");
    config.redis_replica_acks = 1;
    config.redis_replica_ack_timeout_ms = timeout.as_millis() as u64;
    let conn = aqs_core::redis_conn::connect(&[primary.url()]).await.expect("the primary");
    (primary, replica, Engine::from_config(conn, &config))
}

/// A write through the engine's connection, as a script's would be.
async fn write(engine: &Engine, key: &str) {
    redis::cmd("SET").arg(key).arg("v").query_async::<()>(&mut engine.conn()).await.unwrap();
}

#[tokio::test]
async fn a_write_waiting_for_the_replica_holds_up_no_other_command() {
    let (primary, replica, engine) = primary_with_replica(Duration::from_secs(10)).await;
    write(&engine, "tacks:first").await;
    engine.confirm_replicated(&["tacks:first".into()]).await.expect("confirmed by the replica in sync");

    put_to_sleep_for(&replica, 3);
    write(&engine, "tacks:second").await;
    let waiting = tokio::spawn({
        let engine = engine.clone();
        async move { engine.confirm_replicated(&["tacks:second".into()]).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Another request's command on the same connection answers while the replica still sleeps: a
    // `WAIT` sent on that connection would have held it until the replica woke and confirmed.
    let read: Option<String> = redis::cmd("GET").arg("tacks:first").query_async(&mut engine.conn()).await.unwrap();
    assert_eq!(read.as_deref(), Some("v"));
    assert!(replication_lag(&primary) > 0, "the read came back only after the replica confirmed");
    assert!(!waiting.is_finished(), "the write was confirmed while its replica slept");
    waiting.await.unwrap().expect("confirmed once the replica woke");
}

#[tokio::test]
async fn a_write_the_replica_does_not_confirm_in_time_is_refused() {
    let (_primary, replica, engine) = primary_with_replica(Duration::from_millis(500)).await;
    put_to_sleep_for(&replica, 3);
    write(&engine, "tacks:late").await;
    let refused = engine.confirm_replicated(&["tacks:late".into()]).await;
    assert!(matches!(refused, Err(StorageError::NotReplicated(_))), "{refused:?}");
}

/// A confirmation is about the primary that took the write only if it comes soon after the write:
/// a round that ends later may have reached a new primary that a failover promoted meanwhile,
/// which never had the write (the connection followed the failover). Here the replica has the
/// write, but the round comes too late to say so.
#[tokio::test]
async fn a_confirmation_later_than_twice_the_timeout_after_the_write_is_refused() {
    // A timeout long enough that a loaded machine still confirms the first write in time.
    let timeout = Duration::from_secs(2);
    let (primary, replica, _engine) = primary_with_replica(timeout).await;
    let options = aqs_core::redis_conn::RedisOptions::urls(&[primary.url()]);
    let acks = aqs_engine::ReplicaAcks::new(1, timeout, options, "tacks:mark:".into());
    let conn = aqs_core::redis_conn::connect(&[primary.url()]).await.expect("the primary");
    let set = |key: &'static str| redis::cmd("SET").arg(key).arg("v").clone();

    let sent = Instant::now();
    set("tacks:soon").query_async::<()>(&mut conn.clone()).await.unwrap();
    acks.confirm(&conn, "tacks:soon", sent).await.expect("confirmed by the replica in sync");

    let sent = Instant::now();
    set("tacks:held").query_async::<()>(&mut conn.clone()).await.unwrap();
    // The process was held up after the write (a starved task, or a command its connection
    // retried on the next primary) for longer than a round in flight and its own may take.
    tokio::time::sleep(timeout * 2 + Duration::from_millis(100)).await;
    let refused = acks.confirm(&conn, "tacks:held", sent).await;
    assert!(matches!(refused, Err(StorageError::NotReplicated(_))), "{refused:?}");
    let mut on_replica = redis::Client::open(replica.url()).unwrap().get_connection().unwrap();
    let held: Option<String> = redis::cmd("GET").arg("tacks:held").query(&mut on_replica).unwrap();
    assert_eq!(held.as_deref(), Some("v"), "the replica had the write all along");
}

#[tokio::test]
async fn concurrent_writes_are_each_confirmed_and_leave_no_marker_behind() {
    let (primary, _replica, engine) = primary_with_replica(Duration::from_secs(10)).await;
    // More writers than rounds run at once, so rounds overlap and writes share them.
    let writers: Vec<_> = (0..64)
        .map(|i| {
            let engine = engine.clone();
            tokio::spawn(async move {
                for j in 0..20 {
                    let key = format!("tacks:{i}:{j}");
                    write(&engine, &key).await;
                    engine.confirm_replicated(&[key]).await?;
                }
                Ok::<_, StorageError>(())
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap().expect("every write confirmed by the replica in sync");
    }
    let mut conn = redis::Client::open(primary.url()).unwrap().get_connection().unwrap();
    let left: Vec<String> = redis::cmd("KEYS").arg("tacks:replica-mark:*").query(&mut conn).unwrap();
    assert!(left.is_empty(), "markers left behind: {left:?}");
}
