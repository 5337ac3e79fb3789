//! One ACME account per directory, stored in PostgreSQL: a process started after the first one
//! (a restart, a replica) uses it instead of registering its own (pebble logs every registration, which the test counts).

use super::{EDGE, KEY, World, status_is};
use crate::harness::Server;

async fn stored_accounts(database: &sqlx::PgPool) -> Vec<String> {
    sqlx::query_scalar("SELECT credentials_encrypted FROM acme_accounts").fetch_all(database).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_and_replicas_use_the_one_stored_acme_account() {
    let mut world = World::start(true, &[]).await;
    let database = sqlx::PgPool::connect(&world.database).await.unwrap();
    // The reconciler gets its account as it starts: registered once, stored sealed.
    let db = &database;
    let first = aqs_testkit::eventually_some("the first start stores an account", move || async move {
        let stored = stored_accounts(db).await;
        (stored.len() == 1).then_some(stored)
    })
    .await;
    assert_eq!(world.pebble.registrations(), 1);
    assert!(!first[0].contains("key_pkcs8"), "the credentials are stored encrypted");

    // Another process takes the first one's place (a restart, or a replica that starts later):
    // it must order through the stored account.
    world.server.kill9();
    let https = format!("127.0.0.1:{}", world.https_port);
    let env = [
        ("AQS_HTTPS_ADDR", https.as_str()),
        ("AQS_EDGE_HOSTNAME", EDGE),
        ("AQS_ACME_DIRECTORY_URL", &world.pebble.directory_url()),
        ("AQS_ACME_CA_FILE", &world.tls.ca_file()),
        ("AQS_DNS_SERVERS", &world.dns.server()),
        ("AQS_CERT_ENCRYPTION_KEY", KEY),
    ];
    world.server =
        Server::start_on(world.server.port, &world.database, &world.redis.url(), &world.namespace, &env).await;
    let (tenant, domain) = world.member().await;
    let id = world.add_host(&tenant, &format!("queue.{domain}")).await;
    world.check(&tenant, &id).await;
    world.wait_host(&tenant, &id, "active", status_is("active")).await;
    assert_eq!(stored_accounts(&database).await, first, "the stored account is the first one");
    assert_eq!(world.pebble.registrations(), 1, "the second start registered no account");

    // A reset ACME server no longer knows the stored account: it is replaced, once, and the order
    // goes through.
    world.pebble.stop();
    world.pebble.start(&world.tls).await;
    let id = world.add_host(&tenant, &format!("again.{domain}")).await;
    world.check(&tenant, &id).await;
    world.wait_host(&tenant, &id, "active", status_is("active")).await;
    let replaced = stored_accounts(&database).await;
    assert_eq!(replaced.len(), 1);
    assert_ne!(replaced, first, "the unknown account was replaced");
    assert_eq!(world.pebble.registrations(), 2);
}
