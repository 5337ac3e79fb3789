//! `SCAN MATCH` over the whole key space, on a single server or on every primary of a Redis
//! Cluster (a plain SCAN on a cluster connection would only walk one random node).

use aqs_core::redis_conn::RedisConn;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{FromRedisValue, RedisResult, Value};

const BATCH: usize = 500;

/// Every key matching `pattern`. Keys created or deleted during the walk may or may not appear
/// (SCAN's guarantee); callers only use this to find stale records, so that is enough.
pub(crate) async fn keys_matching(conn: &mut RedisConn, pattern: &str) -> RedisResult<Vec<String>> {
    let mut keys = Vec::new();
    match conn {
        RedisConn::Cluster(cluster, _) => {
            let nodes: String = redis::cmd("CLUSTER").arg("NODES").query_async(cluster).await?;
            for (host, port) in primaries(&nodes) {
                let mut cursor = "0".to_owned();
                loop {
                    let routing =
                        RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host: host.clone(), port });
                    let reply: Value = cluster.route_command(scan_cmd(&cursor, pattern), routing).await?;
                    let (next, batch) = <(String, Vec<String>)>::from_redis_value(reply)?;
                    keys.extend(batch);
                    if next == "0" {
                        break;
                    }
                    cursor = next;
                }
            }
        }
        single => {
            let mut cursor = "0".to_owned();
            loop {
                let (next, batch): (String, Vec<String>) = scan_cmd(&cursor, pattern).query_async(single).await?;
                keys.extend(batch);
                if next == "0" {
                    break;
                }
                cursor = next;
            }
        }
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(keys)
}

fn scan_cmd(cursor: &str, pattern: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("SCAN");
    cmd.arg(cursor).arg("MATCH").arg(pattern).arg("COUNT").arg(BATCH);
    cmd
}

/// Host and port of every healthy primary in `CLUSTER NODES` output
/// (`<id> <ip:port@cport[,hostname]> <flags> …`).
fn primaries(nodes: &str) -> Vec<(String, u16)> {
    nodes
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let address = fields.nth(1)?;
            let flags = fields.next()?;
            if !flags.split(',').any(|f| f == "master") || flags.contains("fail") {
                return None;
            }
            let (host, port) = address.split('@').next()?.rsplit_once(':')?;
            Some((host.to_owned(), port.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_healthy_primaries() {
        let nodes = "a1 10.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n\
                     b2 10.0.0.2:7001@17001 slave a1 0 0 1 connected\n\
                     c3 10.0.0.3:7002@17002 master,fail - 0 0 2 disconnected\n\
                     d4 10.0.0.4:7003@17003,redis-4 master - 0 0 3 connected 5461-16383\n";
        assert_eq!(primaries(nodes), vec![("10.0.0.1".into(), 7000), ("10.0.0.4".into(), 7003)]);
    }
}
