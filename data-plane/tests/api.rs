//! End-to-end tests of the data plane: the real router and background tasks on 127.0.0.1:0, a real
//! Redis (`AQS_TEST_REDIS_URL`, default redis://127.0.0.1:6379), a fresh namespace and queue per
//! test, the control plane's projection written directly into Redis.

#[path = "api/helpers.rs"]
mod helpers;

#[path = "api/auth.rs"]
mod auth;
#[path = "api/browse.rs"]
mod browse;
#[path = "api/cluster.rs"]
mod cluster;
#[path = "api/concurrency.rs"]
mod concurrency;
#[path = "api/consume_ack.rs"]
mod consume_ack;
#[path = "api/dead_letters.rs"]
mod dead_letters;
#[path = "api/extend.rs"]
mod extend;
#[path = "api/health.rs"]
mod health;
#[path = "api/hostile.rs"]
mod hostile;
#[path = "api/idempotency_index.rs"]
mod idempotency_index;
#[path = "api/large_messages.rs"]
mod large_messages;
#[path = "api/leases.rs"]
mod leases;
#[path = "api/longpoll.rs"]
mod longpoll;
#[path = "api/manage.rs"]
mod manage;
#[path = "api/openapi.rs"]
mod openapi;
#[path = "api/publish.rs"]
mod publish;
#[path = "api/push_batch.rs"]
mod push_batch;
#[path = "api/push_delivery.rs"]
mod push_delivery;
#[path = "api/push_flow.rs"]
mod push_flow;
#[path = "api/push_guard.rs"]
mod push_guard;
#[path = "api/push_handler.rs"]
mod push_handler;
#[path = "api/push_keep_alive.rs"]
mod push_keep_alive;
#[path = "api/push_replicas.rs"]
mod push_replicas;
#[path = "api/push_settle.rs"]
mod push_settle;
#[path = "api/rate_limits.rs"]
mod rate_limits;
#[path = "api/recovery.rs"]
mod recovery;
#[path = "api/request_id.rs"]
mod request_id;
#[path = "api/storage_budget.rs"]
mod storage_budget;
#[path = "api/suspended.rs"]
mod suspended;
#[path = "api/timing.rs"]
mod timing;
#[path = "api/validation.rs"]
mod validation;
