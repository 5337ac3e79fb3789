//! Whether Redis can take this process's writes now, asked one way by the data plane's health,
//! every role's `/readyz` and start-up. Answering PING is not enough: a server pointed at by
//! mistake that is a replica, or a primary that a failover demoted before the connection followed
//! the new one, answers every read and refuses every write with `READONLY`.
//!
//! A cluster is not asked: its client sends each write to the primary of the key's slot and follows
//! `MOVED` after a failover, so it never writes to a replica. A server that refuses `ROLE` to this
//! process's user (`NOPERM` under a narrow ACL) is taken as writable: a write it then refuses still
//! answers 503 with `Retry-After`.

use crate::redis_conn::RedisConn;
use redis::{ErrorKind, ServerErrorKind, Value};
use std::time::Duration;

/// What a probe found.
#[derive(Debug, PartialEq, Eq)]
pub enum RedisState {
    Writable,
    /// No answer in time, or an error; the text says which.
    Unreachable(String),
    /// Answers, but as a replica; the text names the node and its primary.
    ReadOnly(String),
}

/// Asks Redis, giving up after `timeout`.
pub async fn probe(conn: &RedisConn, timeout: Duration) -> RedisState {
    let mut conn = conn.clone();
    match tokio::time::timeout(timeout, ask(&mut conn)).await {
        Err(_) => RedisState::Unreachable(format!("Redis did not answer within {} ms", timeout.as_millis())),
        Ok(Err(err)) => RedisState::Unreachable(err.to_string()),
        Ok(Ok(state)) => state,
    }
}

async fn ask(conn: &mut RedisConn) -> redis::RedisResult<RedisState> {
    if matches!(conn, RedisConn::Cluster(..)) {
        redis::cmd("PING").query_async::<String>(conn).await?;
        return Ok(RedisState::Writable);
    }
    match redis::cmd("ROLE").query_async::<Vec<Value>>(conn).await {
        Ok(role) => Ok(from_role(&node_of(conn), &role)),
        Err(err) if err.kind() == ErrorKind::Server(ServerErrorKind::NoPerm) => {
            redis::cmd("PING").query_async::<String>(conn).await?;
            Ok(RedisState::Writable)
        }
        Err(err) => Err(err),
    }
}

/// The address this connection reaches now (the current primary, through Sentinels).
fn node_of(conn: &RedisConn) -> String {
    conn.subscriber().get_connection_info().addr().to_string()
}

/// Reads a `ROLE` answer: `["master", …]`, or `["slave", primary host, primary port, …]`.
fn from_role(node: &str, role: &[Value]) -> RedisState {
    let text = |value: Option<&Value>| value.and_then(|v| redis::from_redis_value::<String>(v.clone()).ok());
    match text(role.first()).as_deref() {
        Some("master") => RedisState::Writable,
        Some("slave" | "replica") => {
            let primary =
                match (text(role.get(1)), role.get(2).and_then(|v| redis::from_redis_value::<u16>(v.clone()).ok())) {
                    (Some(host), Some(port)) => format!("{host}:{port}"),
                    _ => "an unknown primary".to_owned(),
                };
            RedisState::ReadOnly(format!("Redis at {node} is a read-only replica of {primary}"))
        }
        other => RedisState::ReadOnly(format!("Redis at {node} answers ROLE {other:?}, not as a primary")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Value {
        Value::BulkString(t.as_bytes().to_vec())
    }

    #[test]
    fn a_primary_is_writable() {
        let role = [text("master"), Value::Int(12), Value::Array(vec![])];
        assert_eq!(from_role("127.0.0.1:6379", &role), RedisState::Writable);
    }

    #[test]
    fn a_replica_is_named_with_its_primary() {
        let role = [text("slave"), text("10.0.0.5"), Value::Int(6380), text("connected"), Value::Int(99)];
        assert_eq!(
            from_role("10.0.0.6:6379", &role),
            RedisState::ReadOnly("Redis at 10.0.0.6:6379 is a read-only replica of 10.0.0.5:6380".into())
        );
    }

    #[test]
    fn a_sentinel_is_not_a_primary() {
        let role = [text("sentinel"), Value::Array(vec![])];
        assert!(matches!(from_role("h:26379", &role), RedisState::ReadOnly(why) if why.contains("sentinel")));
    }
}
