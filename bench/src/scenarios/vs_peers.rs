//! The peer groups `rabbitmq` and `nats`: start the peer's private server, run its scenarios
//! (`peers::group`), stop it, and put its figures beside AQS's from this run (`peers::compare`).
//! They run after the AQS groups, whose figures they read from `Ctx::aqs`.

use super::{Ctx, progress};
use crate::peers::compare::{self, Peer};
use crate::peers::{group, nats, nats_server, rabbitmq, rabbitmq_node};
use crate::scenario_result::ScenarioResult;

pub async fn rabbitmq(ctx: &mut Ctx) -> Vec<ScenarioResult> {
    let peer = Peer {
        key: "rabbitmq",
        label: "rabbitmq quorum queue",
        settings: rabbitmq::describe(rabbitmq_node::version().as_deref()),
        targets: compare::RABBITMQ,
    };
    progress("rabbitmq: starting a private node");
    let mut side = match rabbitmq::RabbitmqSide::start().await {
        Ok(side) => side,
        Err(err) => return vec![ScenarioResult::failed("rabbitmq", "-", &err)],
    };
    let (figures, errors) = group::run(&mut side, peer.key, &ctx.scale, ctx.aqs.end_to_end.map(|e| e.rate)).await;
    side.stop().await;
    progress("rabbitmq: stopped");
    let mut rows = compare::rows(&peer, &ctx.aqs, &figures, &ctx.scale);
    rows.extend(compare::error_rows(peer.key, &errors));
    rows
}

pub async fn jetstream(ctx: &mut Ctx) -> Vec<ScenarioResult> {
    let peer = Peer {
        key: "jetstream",
        label: "jetstream file stream",
        settings: nats::describe(nats_server::version().as_deref()),
        targets: compare::JETSTREAM,
    };
    progress("jetstream: starting a private nats-server");
    let mut side = match nats::NatsSide::start().await {
        Ok(side) => side,
        Err(err) => return vec![ScenarioResult::failed("jetstream", "-", &err)],
    };
    let (figures, errors) = group::run(&mut side, peer.key, &ctx.scale, ctx.aqs.end_to_end.map(|e| e.rate)).await;
    side.stop().await;
    progress("jetstream: stopped");
    let mut rows = compare::rows(&peer, &ctx.aqs, &figures, &ctx.scale);
    rows.extend(compare::error_rows(peer.key, &errors));
    rows
}
