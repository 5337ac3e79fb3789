//! A store that is not ready is a 503 with `Retry-After`, never a 500, and never takes down what
//! does not need it: Redis replaying a large AOF after a restart, and PostgreSQL down when the
//! all-roles process starts (the data plane serves at once; management and the console answer 503
//! until PostgreSQL is reached, then serve without a restart), and PostgreSQL going away under a
//! running process (the first request that finds it gone tells every later one at once).

use crate::harness::{Redis, Server, Tenant, fresh_database};
use reqwest::header::RETRY_AFTER;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

/// An answer with the headers that matter here.
struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

async fn send(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let retry_after = response.headers().get(RETRY_AFTER).map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    Answer { status, retry_after, body: serde_json::from_str(&text).unwrap_or(Value::String(text)) }
}

#[track_caller]
fn assert_unavailable(answer: &Answer, what: &str) {
    assert_eq!(answer.status, 503, "{what}: {}", answer.body);
    assert_eq!(answer.body["error"], "service_unavailable", "{what}: {}", answer.body);
    assert!(answer.retry_after.is_some(), "{what}: a 503 carries Retry-After");
}

/// True while the Redis at `url` answers LOADING.
fn is_loading(url: &str) -> bool {
    let client = redis::Client::open(url).unwrap();
    match client.get_connection() {
        Ok(mut conn) => match redis::cmd("PING").query::<String>(&mut conn) {
            Ok(_) => false,
            Err(err) => err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::BusyLoading),
        },
        Err(err) => err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::BusyLoading),
    }
}

/// Fills Redis with `count` small keys, so that replaying its AOF takes a while.
fn ballast(url: &str, count: usize) {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    for chunk in (0..count).collect::<Vec<_>>().chunks(10_000) {
        let mut pipe = redis::pipe();
        for i in chunk {
            pipe.set(format!("ballast:{i}"), "x").ignore();
        }
        pipe.query::<()>(&mut conn).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_redis_loads_its_aof_the_data_plane_answers_503_with_retry_after() {
    let mut redis = Redis::start("always");
    let database = fresh_database().await;
    let server = Server::start(&database, &redis.url(), &aqs_testkit::namespace()).await;
    let tenant = Tenant::sign_up(&server, json!({"name": "loading"})).await;
    let queue = |route: &str| format!("{}/queue/v1/{}/{route}", tenant.base, tenant.slug);

    let (status, body) = tenant.publish("before the restart").await;
    assert_eq!(status, 201, "{body}");
    let leased = tenant.consume(1, 0, 600).await;
    assert_eq!(leased.len(), 1);
    let receipt = leased[0].2.clone();
    let (status, body) = tenant.publish("waiting").await;
    assert_eq!(status, 201, "{body}");

    ballast(&redis.url(), 200_000);
    redis.kill9();
    // A real LOADING window: Redis replays the AOF, pausing a little per key.
    redis.restart_loading(&["--key-load-delay", "20"]);

    let (mut published, mut consumed, mut acked) = (0, 0, 0);
    // The answers of the round during which loading ended: they may have been served.
    let mut last_round = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    while is_loading(&redis.url()) {
        assert!(Instant::now() < deadline, "Redis never finished loading");
        // One idempotency key: however many of these get through, one message is stored.
        let publish = json!({"body": "x", "idempotency_key": "during-loading"});
        let answers = [
            ("publish", send(tenant.http.post(queue("messages")).bearer_auth(&tenant.token).json(&publish)).await),
            (
                "consume",
                send(tenant.http.post(queue("consume")).bearer_auth(&tenant.token).json(&json!({"max_messages": 1})))
                    .await,
            ),
            (
                "ack",
                send(tenant.http.post(queue("ack")).bearer_auth(&tenant.token).json(&json!({"receipts": [receipt]})))
                    .await,
            ),
        ];
        for (what, answer) in &answers {
            assert_ne!(answer.status, 500, "{what} while loading must not be an internal error: {}", answer.body);
        }
        // Only answers given while Redis was certainly still loading must be 503s.
        if !is_loading(&redis.url()) {
            last_round = Some(answers);
            break;
        }
        for (what, answer) in &answers {
            assert_unavailable(answer, what);
            match *what {
                "publish" => published += 1,
                "consume" => consumed += 1,
                _ => acked += 1,
            }
        }
    }
    assert!(published > 0 && consumed > 0 && acked > 0, "each route answered 503 while Redis loaded");

    // What the last round did if it was served after loading ended.
    let served = |what: &str, status: u16| {
        last_round.as_ref().and_then(|round| round.iter().find(|(w, a)| *w == what && a.status == status))
    };
    let mut expected = vec!["waiting".to_owned()];
    if served("publish", 201).is_some() {
        expected.push("x".to_owned());
    }
    let mut delivered: Vec<String> = served("consume", 200)
        .map(|(_, a)| a.body["messages"].as_array().unwrap().iter().map(body_text).collect())
        .unwrap_or_default();
    let acked_in_last_round = served("ack", 200).is_some_and(|(_, a)| a.body["acked"] == 1);

    // Loaded: the lease taken before the restart is still current, and nothing was lost.
    if !acked_in_last_round {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let answer =
                send(tenant.http.post(queue("ack")).bearer_auth(&tenant.token).json(&json!({"receipts": [receipt]})))
                    .await;
            if answer.status == 200 {
                assert_eq!(answer.body["acked"], 1, "the lease from before the restart is current: {}", answer.body);
                break;
            }
            assert_unavailable(&answer, "ack after loading");
            assert!(Instant::now() < deadline, "the data plane did not recover after Redis loaded");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    delivered.extend(tenant.consume(10, 0, 60).await.into_iter().map(|m| m.1));
    delivered.sort();
    expected.sort();
    assert_eq!(delivered, expected, "every stored message is delivered once");
}

fn body_text(message: &Value) -> String {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(message["body_base64"].as_str().unwrap()).unwrap();
    String::from_utf8(bytes).unwrap()
}

/// A TCP door in front of the test's PostgreSQL: closed (its port refuses connections) until
/// opened, then forwarding every connection to the real server until closed again (which also
/// cuts the connections it forwards, as a server that went away does).
///
/// While closed, the port stays bound without listening: a connection is refused, and no other
/// server of the test run can be given the port meanwhile. (A port merely remembered was once
/// handed to another test's HTTP server, which then answered the service's PostgreSQL handshake
/// and made the door's own bind fail.)
struct PostgresDoor {
    port: u16,
    upstream: String,
    /// The port's socket while the door is closed.
    reserved: Mutex<Option<TcpSocket>>,
    /// The accept loop while the door is open; it owns the listening socket.
    accepting: Mutex<Option<JoinHandle<()>>>,
    /// Every forwarding task, aborted on `close`.
    forwarding: Arc<Mutex<Vec<AbortHandle>>>,
}

/// A socket bound to `port` on loopback (0: any free one) that does not listen yet.
fn reserve(port: u16) -> TcpSocket {
    let socket = TcpSocket::new_v4().unwrap();
    // The connections a closed door cut leave the port in TIME_WAIT.
    socket.set_reuseaddr(true).unwrap();
    socket.bind(([127, 0, 0, 1], port).into()).unwrap();
    socket
}

impl PostgresDoor {
    fn closed(upstream: &str) -> Self {
        let socket = reserve(0);
        Self {
            port: socket.local_addr().unwrap().port(),
            upstream: upstream.to_owned(),
            reserved: Mutex::new(Some(socket)),
            accepting: Mutex::default(),
            forwarding: Arc::default(),
        }
    }

    /// `database_url` with its server replaced by this door.
    fn url(&self, database_url: &str) -> String {
        let (scheme, rest) = database_url.split_once("://").unwrap();
        let (credentials, rest) = rest.rsplit_once('@').map_or(("", rest), |(c, r)| (c, r));
        let (_, path) = rest.split_once('/').unwrap();
        let at = if credentials.is_empty() { String::new() } else { format!("{credentials}@") };
        format!("{scheme}://{at}127.0.0.1:{}/{path}", self.port)
    }

    async fn open(&self) {
        let socket = self.reserved.lock().unwrap().take().expect("the door is closed");
        let listener = socket.listen(1024).unwrap();
        let (upstream, forwarding) = (self.upstream.clone(), self.forwarding.clone());
        let accepting = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let forward = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(upstream).await {
                        let _closed = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                forwarding.lock().unwrap().push(forward.abort_handle());
            }
        });
        *self.accepting.lock().unwrap() = Some(accepting);
    }

    async fn close(&self) {
        let accepting = self.accepting.lock().unwrap().take().expect("the door is open");
        accepting.abort();
        // Once the accept loop has ended its listener is gone, and the port can be held again.
        let _aborted = accepting.await;
        for task in self.forwarding.lock().unwrap().drain(..) {
            task.abort();
        }
        *self.reserved.lock().unwrap() = Some(reserve(self.port));
    }
}

/// `host:port` of a PostgreSQL URL.
fn server_of(database_url: &str) -> String {
    let rest = database_url.split_once("://").unwrap().1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    rest.split_once('/').unwrap().0.to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_postgres_down_the_data_plane_serves_and_management_waits_for_it() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let mut server = Server::start(&database, &redis.url(), &aqs_testkit::namespace()).await;
    let tenant = Tenant::sign_up(&server, json!({"name": "outage"})).await;

    // The same process, restarted while PostgreSQL cannot be reached.
    server.kill9();
    let door = PostgresDoor::closed(&server_of(&database));
    server.set_env("AQS_DATABASE_URL", &door.url(&database));
    server.restart().await;

    let (status, body) = tenant.publish("during the outage").await;
    assert_eq!(status, 201, "the data plane publishes without PostgreSQL: {body}");
    let consumed = tenant.consume(1, 0, 60).await;
    assert_eq!(consumed.len(), 1);
    assert_eq!(consumed[0].1, "during the outage");
    assert_eq!(tenant.ack(&[consumed[0].2.clone()]).await["acked"], 1);

    let queues = format!("{}/api/v1/queues", tenant.base);
    let answer = send(tenant.http.get(&queues).bearer_auth(&tenant.session)).await;
    assert_unavailable(&answer, "GET /api/v1/queues");
    let login = json!({"email": "nobody@example.com", "password": aqs_testkit::PASSWORD});
    let answer = send(tenant.http.post(format!("{}/api/v1/auth/login", tenant.base)).json(&login)).await;
    assert_unavailable(&answer, "POST /api/v1/auth/login");
    let page = send(tenant.http.get(format!("{}/login", tenant.base))).await;
    assert_eq!(page.status, 503, "the console's log-in page");
    assert!(page.retry_after.is_some(), "the console's 503 carries Retry-After");

    // PostgreSQL comes back: management serves again, with no restart of aqs.
    door.open().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let listed = loop {
        let answer = send(tenant.http.get(&queues).bearer_auth(&tenant.session)).await;
        if answer.status == 200 {
            break answer.body;
        }
        assert_unavailable(&answer, "GET /api/v1/queues before PostgreSQL is reached");
        assert!(Instant::now() < deadline, "management did not come back with PostgreSQL");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(listed["queues"][0]["slug"], tenant.slug.as_str(), "{listed}");
    let page = send(tenant.http.get(format!("{}/login", tenant.base))).await;
    assert_eq!(page.status, 200, "the console serves again");
    let (status, body) = tenant.publish("after the outage").await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_going_away_is_found_by_the_first_request_and_told_to_the_rest() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let door = PostgresDoor::closed(&server_of(&database));
    door.open().await;
    let server = Server::start(&door.url(&database), &redis.url(), &aqs_testkit::namespace()).await;
    let tenant = Tenant::sign_up(&server, json!({"name": "goes-away"})).await;
    let queues = format!("{}/api/v1/queues", tenant.base);
    assert_eq!(send(tenant.http.get(&queues).bearer_auth(&tenant.session)).await.status, 200);

    door.close().await;
    let answer = send(tenant.http.get(&queues).bearer_auth(&tenant.session)).await;
    assert_unavailable(&answer, "GET /api/v1/queues once PostgreSQL went away");
    // Told to readiness and to the next request by the one that found it, not by a later probe.
    let ready = send(tenant.http.get(format!("{}/readyz", tenant.base))).await;
    assert_eq!(ready.status, 503, "{}", ready.body);
    assert_eq!(ready.body["waiting_for"], json!(["postgres"]), "{}", ready.body);
    let answer = send(tenant.http.get(&queues).bearer_auth(&tenant.session)).await;
    assert_unavailable(&answer, "the next GET /api/v1/queues");
    let (status, body) = tenant.publish("the data plane does not need PostgreSQL").await;
    assert_eq!(status, 201, "{body}");

    door.open().await;
    aqs_testkit::eventually("management serves again once PostgreSQL is back", || {
        let asked = tenant.http.get(&queues).bearer_auth(&tenant.session).send();
        async move { asked.await.is_ok_and(|r| r.status() == 200) }
    })
    .await;
}
