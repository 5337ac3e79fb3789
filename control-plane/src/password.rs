//! Member passwords: argon2id (the `argon2` crate's default parameters) in PHC string form.
//! Hashing is deliberately slow and holds 19 MiB, so it runs on the blocking pool, never on an
//! async worker, and through the [`HashPool`]'s fixed number of slots (503 when none frees).

use crate::hash_pool::HashPool;
use anyhow::anyhow;
use aqs_core::ApiResult;
use argon2::password_hash::SaltString;
use argon2::password_hash::rand_core::OsRng;
use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier};
use std::sync::LazyLock;

/// Hashes a password with a fresh random salt.
pub(crate) async fn hash(pool: &HashPool, password: String) -> ApiResult<String> {
    let hashed = pool.run(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(|err| anyhow!("argon2 hash: {err}"))
    });
    Ok(hashed.await??)
}

/// True when `password` matches `hash`. With no hash (an unknown email) it still spends the time
/// of one verification, so the answer's timing does not reveal which emails are members.
pub(crate) async fn verify(pool: &HashPool, password: String, hash: Option<String>) -> ApiResult<bool> {
    let verified = pool.run(move || {
        let known = hash.is_some();
        let hash = hash.unwrap_or_else(|| DUMMY_HASH.clone());
        let parsed = PasswordHash::new(&hash).map_err(|err| anyhow!("stored password hash is invalid: {err}"))?;
        let matches = Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok();
        Ok::<_, anyhow::Error>(known && matches)
    });
    Ok(verified.await??)
}

static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default().hash_password(b"timing equaliser", &salt).expect("argon2 with default parameters").to_string()
});

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn verifies_only_the_right_password() {
        let pool = HashPool::new(1);
        let stored = hash(&pool, "correct horse".into()).await.unwrap();
        assert!(stored.starts_with("$argon2id$"));
        assert!(verify(&pool, "correct horse".into(), Some(stored.clone())).await.unwrap());
        assert!(!verify(&pool, "wrong horse".into(), Some(stored)).await.unwrap());
        assert!(!verify(&pool, "timing equaliser".into(), None).await.unwrap());
    }
}
