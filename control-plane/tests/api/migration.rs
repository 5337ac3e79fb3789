//! The teams migration over an installation made before it: a database at 0012 (migrated by
//! sqlx's migrator, as `aqs serve` did, from the files 0001–0012 alone), filled the old way (rows
//! owned by `member_id`, a live member and an erased one), then upgraded by the service's own
//! migrator (`aqs_control_plane::migrate`, all of `migrations/`), which must accept that history
//! and apply 0013. Every member gets a personal team with their id; every owned row keeps its
//! owner as its team; nothing is lost.

use sqlx::PgPool;
use sqlx::migrate::Migrator;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use uuid::Uuid;

/// The tables whose rows a member owned, and the column that names the row.
const OWNED: &[(&str, &str)] = &[
    ("queues", "id"),
    ("callback_urls", "id"),
    ("domains", "id"),
    ("hosts", "id"),
    ("billing_accounts", "team_id"),
    ("queue_add_ons", "queue_id"),
    ("billing_outbox", "id"),
];

/// Tables that name no owner but must keep every row.
const KEPT: &[&str] = &["members", "tokens", "push_targets", "sessions"];

/// A directory holding migrations 0001–0012 only, byte for byte (so their checksums are the ones
/// the full migrator later compares).
fn migrations_before_teams() -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    let dir = std::env::temp_dir().join(format!("aqs-migrations-0012-{}", Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&source)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".sql"))
        .collect();
    names.sort();
    let before: Vec<&String> = names.iter().filter(|name| name.as_str() < "0013").collect();
    assert_eq!(before.len(), 12, "{names:?}");
    assert!(names.iter().any(|name| name == "0013_teams.sql"), "{names:?}");
    for name in before {
        std::fs::copy(source.join(name), dir.join(name)).unwrap();
    }
    dir
}

async fn exec(db: &PgPool, sql: &str) {
    sqlx::raw_sql(sql).execute(db).await.unwrap_or_else(|err| panic!("{err}: {sql}"));
}

async fn count(db: &PgPool, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}")).fetch_one(db).await.unwrap()
}

/// Each row of `table`: its key and the owner column's value.
async fn owners(db: &PgPool, table: &str, key: &str, owner: &str) -> BTreeMap<String, String> {
    let rows: Vec<(String, String)> =
        sqlx::query_as(&format!("SELECT {key}::text, {owner}::text FROM {table}")).fetch_all(db).await.unwrap();
    rows.into_iter().collect()
}

#[sqlx::test(migrations = false)]
async fn the_teams_migration_gives_every_member_a_personal_team_owning_what_they_owned(db: PgPool) {
    let dir = migrations_before_teams();
    Migrator::new(dir.as_path()).await.unwrap().run(&db).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();

    // The old way: a live member and an erased one (0008, 0010), each owning rows.
    let (live, erased) = (Uuid::new_v4(), Uuid::new_v4());
    let (q1, q2, q3) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let (d1, d2) = (Uuid::new_v4(), Uuid::new_v4());
    exec(
        &db,
        &format!(
            "INSERT INTO members (id, email, password_hash, created_at)
                 VALUES ('{live}', 'ada@example.com', '$argon2id$x', now() - interval '2 days');
             INSERT INTO members (id, deleted_at, erasure_marker, created_at)
                 VALUES ('{erased}', now() - interval '1 day', 'erased_0123', now() - interval '3 days');
             INSERT INTO queues (id, member_id, name, slug, visibility_timeout_seconds, max_attempts, payload_size, storage_limit)
                 VALUES ('{q1}', '{live}', 'jobs', 'jobs', 30, 5, 1048576, 104857600),
                        ('{q2}', '{live}', 'emails', 'emails', 30, 5, 10485760, 104857600);
             INSERT INTO queues (id, member_id, name, slug, visibility_timeout_seconds, max_attempts, payload_size, storage_limit, deleted_at)
                 VALUES ('{q3}', '{erased}', 'old', 'old', 30, 5, 1048576, 104857600, now());
             INSERT INTO tokens (id, queue_id, name, scopes, secret_hash, last_four)
                 VALUES ('{}', '{q1}', 'ci', ARRAY['send'], '{}', 'abcd');
             INSERT INTO callback_urls (id, member_id, prefix) VALUES ('{}', '{live}', 'https://hooks.example.com/');
             INSERT INTO push_targets (queue_id, handler_url, mode, messages_per_run, wait_seconds, timeout_seconds, concurrency, secret)
                 VALUES ('{q1}', 'https://hooks.example.com/jobs', 'message', 10, 5, 30, 10, 'whsec_x');
             INSERT INTO domains (id, member_id, name, verification_value, status, verified_at)
                 VALUES ('{d1}', '{live}', 'example.com', 'aqs-verify=a', 'verified', now()),
                        ('{d2}', '{erased}', 'example.org', 'aqs-verify=b', 'pending', NULL);
             INSERT INTO hosts (id, member_id, domain_id, queue_id, hostname)
                 VALUES ('{}', '{live}', '{d1}', '{q1}', 'jobs.example.com');
             INSERT INTO billing_accounts (member_id, customer_id, monthly_limit_cents, alert_percent)
                 VALUES ('{live}', 'cus_live', 5000, 50), ('{erased}', 'cus_erased', NULL, NULL);
             INSERT INTO queue_add_ons (queue_id, member_id, payload_size) VALUES ('{q2}', '{live}', 10485760);
             INSERT INTO billing_outbox (member_id, reason) VALUES ('{live}', 'queue added'), ('{erased}', 'account closed');
             INSERT INTO sessions (id, member_id, expires_at) VALUES ('{}', '{live}', now() + interval '1 day');",
            Uuid::new_v4(),
            "a".repeat(64),
            Uuid::new_v4(),
            Uuid::new_v4(),
            Uuid::new_v4(),
        ),
    )
    .await;
    let mut before = BTreeMap::new();
    for (table, key) in OWNED {
        let key = if *key == "team_id" { "member_id" } else { key };
        before.insert(*table, owners(&db, table, key, "member_id").await);
    }
    let mut kept = BTreeMap::new();
    for table in KEPT {
        kept.insert(*table, count(&db, table).await);
    }

    // The service's migrator accepts the history it finds and applies 0013.
    aqs_control_plane::migrate(&db).await.expect("the full migrator over a database at 0012");
    aqs_control_plane::migrate(&db).await.expect("and again: nothing left to apply");
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
        .fetch_all(&db)
        .await
        .unwrap();
    assert_eq!(applied, (1..=13).collect::<Vec<i64>>());

    // Every member, erased ones too, has a personal team with their own id, named "Personal".
    let teams: Vec<(Uuid, String, bool, bool)> =
        sqlx::query_as("SELECT id, name, personal, deleted_at IS NOT NULL FROM teams ORDER BY id")
            .fetch_all(&db)
            .await
            .unwrap();
    let mut expected = vec![(live, "Personal".to_owned(), true, false), (erased, "Personal".to_owned(), true, true)];
    expected.sort();
    assert_eq!(teams, expected, "one personal team per member; the erased member's is deleted");
    let same_times: bool = sqlx::query_scalar(
        "SELECT bool_and(t.created_at = m.created_at AND t.deleted_at IS NOT DISTINCT FROM m.deleted_at)
         FROM teams t JOIN members m ON m.id = t.id",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert!(same_times, "a personal team was made when its member was, and closed when they were");
    // The live member owns theirs; the erased member is in no team.
    let memberships: Vec<(Uuid, Uuid, String)> =
        sqlx::query_as("SELECT team_id, member_id, role FROM team_members").fetch_all(&db).await.unwrap();
    assert_eq!(memberships, [(live, live, "owner".to_owned())]);

    // Every owned row now belongs to the team with its old member's id; no row was lost.
    for (table, key) in OWNED {
        let after = owners(&db, table, key, "team_id").await;
        assert_eq!(after, before[table], "{table}: each row's team is its old member");
        assert!(!after.is_empty(), "{table} held rows");
    }
    for table in KEPT {
        assert_eq!(count(&db, table).await, kept[table], "{table} keeps every row");
    }
    let leftover: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.columns
         WHERE table_schema = current_schema() AND column_name = 'member_id'
           AND table_name::text = ANY($1) ORDER BY 1",
    )
    .bind(OWNED.iter().map(|(table, _)| table.to_string()).collect::<Vec<_>>())
    .fetch_all(&db)
    .await
    .unwrap();
    assert!(leftover.is_empty(), "owned tables keep no member_id: {leftover:?}");

    // The owners' foreign keys point at teams: a team that does not exist is refused, even when a
    // member has that id (a member without a team row is no owner).
    for (table, _) in OWNED {
        let referenced: Vec<String> = sqlx::query_scalar(
            "SELECT confrelid::regclass::text FROM pg_constraint c
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)
             WHERE c.contype = 'f' AND c.conrelid = $1::regclass AND a.attname = 'team_id'",
        )
        .bind(table)
        .fetch_all(&db)
        .await
        .unwrap();
        assert_eq!(referenced, ["teams"], "{table}.team_id references teams");
    }
    let no_team = Uuid::new_v4();
    exec(
        &db,
        &format!(
            "INSERT INTO members (id, email, password_hash) VALUES ('{no_team}', 'bob@example.com', '$argon2id$y')"
        ),
    )
    .await;
    for owner in [Uuid::new_v4(), no_team] {
        let refused = sqlx::query(
            "INSERT INTO queues (id, team_id, name, slug, visibility_timeout_seconds, max_attempts, payload_size, storage_limit)
             VALUES ($1, $2, 'new', 'new', 30, 5, 1048576, 104857600)",
        )
        .bind(Uuid::new_v4())
        .bind(owner)
        .execute(&db)
        .await
        .unwrap_err();
        let code = refused.as_database_error().and_then(|e| e.code()).map(|c| c.into_owned());
        assert_eq!(code.as_deref(), Some("23503"), "a foreign key violation: {refused}");
    }
    // The live member's team takes new rows.
    sqlx::query(
        "INSERT INTO queues (id, team_id, name, slug, visibility_timeout_seconds, max_attempts, payload_size, storage_limit)
         VALUES ($1, $2, 'new', 'new', 30, 5, 1048576, 104857600)",
    )
    .bind(Uuid::new_v4())
    .bind(live)
    .execute(&db)
    .await
    .unwrap();
}
