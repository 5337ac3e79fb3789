//! The installation's billing mode, kept in PostgreSQL (`migrations/0011_billing_mode.sql`) so that
//! every process on one database agrees on it: billing through Stripe or add-ons without charge.
//!
//! A process whose settings disagree with the recorded mode refuses to start, and one with billing
//! off checks the mode again before each free grant (it may have started while PostgreSQL was
//! unreachable). An operator changes the mode on purpose with `aqs admin billing-mode`.

use crate::state::ControlPlane;
use aqs_core::{ApiError, ApiResult};
use sqlx::PgPool;
use std::time::Duration;

/// How long start-up waits for PostgreSQL to read the mode before going on without it.
const START_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BillingMode {
    /// Payload add-ons billed through Stripe.
    Stripe,
    /// Payload add-ons granted without charge.
    Off,
}

impl BillingMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stripe => "stripe",
            Self::Off => "off",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "stripe" => Some(Self::Stripe),
            "off" => Some(Self::Off),
            _ => None,
        }
    }

    fn explain(self) -> &'static str {
        match self {
            Self::Stripe => "payload add-ons billed through Stripe",
            Self::Off => "billing off (add-ons granted without charge)",
        }
    }
}

impl ControlPlane {
    /// This process's own mode, from its settings.
    pub fn billing_mode(&self) -> BillingMode {
        if self.billing().is_some() { BillingMode::Stripe } else { BillingMode::Off }
    }

    /// Records this process's mode if none is recorded yet, and fails if another is. When
    /// PostgreSQL cannot be reached now it says so and returns: the grant path checks again.
    pub async fn check_billing_mode(&self) -> anyhow::Result<()> {
        let mine = self.billing_mode();
        let recorded = match tokio::time::timeout(START_TIMEOUT, record_if_unset(self.db(), mine)).await {
            Ok(Ok(recorded)) => recorded,
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "cannot read the installation's billing mode yet; checked again before each grant");
                return Ok(());
            }
            Err(_) => {
                tracing::warn!(
                    "PostgreSQL did not answer in time to read the installation's billing mode; checked again before each grant"
                );
                return Ok(());
            }
        };
        if recorded != mine {
            anyhow::bail!(
                "this process has {} but the database records {} for this installation: give every \
                 process the same Stripe settings (AQS_STRIPE_SECRET_KEY and the prices), or change the \
                 installation's mode on purpose with `aqs admin billing-mode {}`",
                mine.explain(),
                recorded.explain(),
                mine.as_str()
            );
        }
        Ok(())
    }
}

/// Inserts `mine` unless a mode is recorded; returns the recorded mode.
async fn record_if_unset(db: &PgPool, mine: BillingMode) -> sqlx::Result<BillingMode> {
    sqlx::query("INSERT INTO installation (billing_mode) VALUES ($1) ON CONFLICT (singleton) DO NOTHING")
        .bind(mine.as_str())
        .execute(db)
        .await?;
    let recorded: String = sqlx::query_scalar("SELECT billing_mode FROM installation").fetch_one(db).await?;
    Ok(BillingMode::parse(&recorded).unwrap_or(mine))
}

/// Sets the installation's mode (`aqs admin billing-mode`); returns the one it replaced.
pub async fn set(db: &PgPool, mode: BillingMode) -> anyhow::Result<Option<BillingMode>> {
    let mut tx = db.begin().await?;
    let before: Option<String> =
        sqlx::query_scalar("SELECT billing_mode FROM installation FOR UPDATE").fetch_optional(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO installation (billing_mode) VALUES ($1)
         ON CONFLICT (singleton) DO UPDATE SET billing_mode = EXCLUDED.billing_mode, recorded_at = now()",
    )
    .bind(mode.as_str())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(before.as_deref().and_then(BillingMode::parse))
}

/// Before a process with billing off grants a larger size without charge: refused while the
/// installation bills add-ons (this process's settings are wrong; another replica may serve it).
pub(crate) async fn require_free_grants(cp: &ControlPlane) -> ApiResult<()> {
    let recorded: Option<String> =
        sqlx::query_scalar("SELECT billing_mode FROM installation").fetch_optional(cp.db()).await?;
    if recorded.as_deref() == Some(BillingMode::Stripe.as_str()) {
        tracing::error!(
            "refused a free payload add-on: this process has billing off but the installation bills add-ons \
             through Stripe; give it the Stripe settings"
        );
        return Err(ApiError::ServiceUnavailable {
            message: "payload add-ons cannot be changed on this server right now; retry shortly".into(),
            retry_after_secs: 5,
            cause: Some("billing off in this process, through Stripe in the installation".into()),
        });
    }
    Ok(())
}
