//! Billing: payload add-ons (10 MiB, 50 MiB) billed monthly per queue through Stripe, usage
//! estimates and budgets (`docs/billing.md`).
//!
//! # Structures
//!
//! - `queue_add_ons` (PostgreSQL): which queue has which add-on. The source of truth for what a
//!   team should pay; a deleted queue's row stops counting at once.
//! - Stripe: one Customer per team (`billing_accounts.customer_id`), at most one live
//!   Subscription with one item per add-on price, `quantity` = number of queues on it, metadata
//!   `queues` = their ids.
//! - `billing_outbox`: "bring team M's subscription in line". Every change of add-ons writes a
//!   row in the same transaction as the change; `outbox` works rows off with exponential backoff.
//! - `billing_events`: Stripe event ids already applied.
//!
//! # The life of an add-on
//!
//! PATCH payload_size up → payment method on file? (no: 402 with a Checkout setup URL) → row in
//! `queue_add_ons` + outbox row → a sync right away in the request: the team's live
//! subscription is read from Stripe, `plan` decides the writes, each is sent with an idempotency
//! key made of the outbox row and the write, and once Stripe has the item the queue's
//! payload_size is raised (and projected). If Stripe cannot be reached the request answers 202
//! and the outbox raises it later. Down (or queue deleted) → the size (or queue) changes at once
//! and the outbox lowers the quantity, removes the item, or cancels the subscription with the
//! last one. Stripe cancelling for non-payment (webhook) removes the team's add-ons and sets
//! their queues back to 1 MiB.
//!
//! # Invariants
//!
//! - A queue never accepts a size it does not pay for, except while a downgrade's write is queued
//!   (then it pays for more than it uses, never less).
//! - Reconciliation is level-based (desired from PostgreSQL, current from Stripe), so a retried or
//!   crashed sync converges; the idempotency key makes a retried write the same request, never a
//!   second charge. Syncs of one team are serialised by a lock on their `billing_accounts` row.
//! - Webhooks are applied once (event id) and never roll state back: subscription and invoice
//!   events are ordered by `created`; payment methods are re-read from Stripe.

pub mod account;
pub mod add_ons;
pub mod admin;
pub mod mode;
pub mod outbox;
pub mod plan;
pub mod signature;
mod stripe_api;
pub mod usage;
pub mod webhook;

use aqs_core::config::Config;
use aqs_core::limits::MIB;
use aqs_core::secret::Secret;
use std::sync::Arc;
use stripe_api::StripeApi;
use tokio::sync::Notify;

/// Stripe settings and client; present only when `AQS_STRIPE_SECRET_KEY` is set.
pub struct Billing {
    stripe: StripeApi,
    webhook_secret: Secret,
    price_10mib: String,
    price_50mib: String,
    /// Wakes the outbox loop when a row was written.
    kick: Arc<Notify>,
}

impl Billing {
    /// `None` when billing is off (no secret key).
    pub fn from_config(config: &Config) -> Option<Self> {
        if config.stripe_secret_key.is_empty() {
            return None;
        }
        let base = if config.stripe_api_base.is_empty() { "https://api.stripe.com" } else { &config.stripe_api_base };
        Some(Self {
            stripe: StripeApi::new(base, config.stripe_secret_key.expose()),
            webhook_secret: config.stripe_webhook_secret.clone(),
            price_10mib: config.stripe_price_payload_10mib.clone(),
            price_50mib: config.stripe_price_payload_50mib.clone(),
            kick: Arc::new(Notify::new()),
        })
    }

    /// The add-on price of a payload size; `None` for the included 1 MiB.
    pub(crate) fn price_for(&self, payload_size: u64) -> Option<&str> {
        match payload_size {
            size if size == 10 * MIB => Some(&self.price_10mib),
            size if size == 50 * MIB => Some(&self.price_50mib),
            _ => None,
        }
    }

    pub(crate) fn stripe(&self) -> &StripeApi {
        &self.stripe
    }

    pub(crate) fn kick(&self) {
        self.kick.notify_one();
    }
}

/// What the console and API say when billing is off.
pub const NOT_CONFIGURED: &str =
    "Billing is not configured on this installation: payload add-ons are granted without charge.";
