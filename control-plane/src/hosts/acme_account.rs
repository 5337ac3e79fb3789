//! The ACME account, one per directory URL, kept in PostgreSQL (`acme_accounts`) and shared by
//! every replica: a restart or a new replica uses the stored account instead of registering
//! another one against the CA's rate limits. The credentials (with the account's private key) are
//! sealed like certificate keys, under `AQS_CERT_ENCRYPTION_KEY`.
//!
//! Two replicas that find no account at once both register one; the first insert wins
//! (`ON CONFLICT DO NOTHING`), and both read back and use the stored one: one account stays in use,
//! the loser's registration is never used again.

use aqs_core::cert_key::CertKeyCipher;
use instant_acme::AccountCredentials;
use sqlx::PgPool;

/// A stored account: its credentials and their sealed form as stored (which names the row when
/// it must be forgotten).
pub(crate) struct Stored {
    pub credentials: AccountCredentials,
    pub sealed: String,
}

/// The stored account of `directory`, if any.
pub(crate) async fn load(db: &PgPool, cipher: &CertKeyCipher, directory: &str) -> Result<Option<Stored>, String> {
    let sealed: Option<String> =
        sqlx::query_scalar("SELECT credentials_encrypted FROM acme_accounts WHERE directory_url = $1")
            .bind(directory)
            .fetch_optional(db)
            .await
            .map_err(|err| format!("cannot read the ACME account from PostgreSQL: {err}"))?;
    let Some(sealed) = sealed else { return Ok(None) };
    let plain = cipher
        .decrypt(&sealed)
        .map_err(|err| format!("cannot decrypt the stored ACME account (AQS_CERT_ENCRYPTION_KEY changed?): {err}"))?;
    let credentials =
        serde_json::from_slice(&plain).map_err(|err| format!("the stored ACME account does not parse: {err}"))?;
    Ok(Some(Stored { credentials, sealed }))
}

/// Stores a newly registered account unless another replica stored one first; then answers the
/// stored account, whichever it is.
pub(crate) async fn store(
    db: &PgPool,
    cipher: &CertKeyCipher,
    directory: &str,
    credentials: &AccountCredentials,
) -> Result<Stored, String> {
    let json = serde_json::to_vec(credentials).map_err(|err| format!("cannot serialise the ACME account: {err}"))?;
    sqlx::query(
        "INSERT INTO acme_accounts (directory_url, credentials_encrypted) VALUES ($1, $2)
         ON CONFLICT (directory_url) DO NOTHING",
    )
    .bind(directory)
    .bind(cipher.encrypt(&json))
    .execute(db)
    .await
    .map_err(|err| format!("cannot store the ACME account in PostgreSQL: {err}"))?;
    load(db, cipher, directory).await?.ok_or_else(|| "the stored ACME account vanished meanwhile".to_owned())
}

/// Forgets the stored account the ACME server no longer knows (it was reset, or the account was
/// deactivated), unless another replica already replaced it.
pub(crate) async fn forget(db: &PgPool, directory: &str, sealed: &str) {
    let deleted = sqlx::query("DELETE FROM acme_accounts WHERE directory_url = $1 AND credentials_encrypted = $2")
        .bind(directory)
        .bind(sealed)
        .execute(db)
        .await;
    if let Err(err) = deleted {
        tracing::warn!(error = %err, "cannot forget the ACME account the server no longer knows; retried");
    }
}
