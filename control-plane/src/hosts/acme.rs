//! One ACME order for one hostname by HTTP-01 (instant-acme): the key authorization of each
//! pending challenge goes into the Redis projection (`Keys::acme_challenge`), where any replica
//! answers `/.well-known/acme-challenge/{token}`; then a fresh key and CSR (rcgen), finalize, and
//! the chain. An authorization the server already holds as valid needs no challenge.
//!
//! The account is the one stored in PostgreSQL for the directory (`acme_account`), registered
//! only when none is stored; one the server no longer knows (a reset test server) is forgotten
//! after the failed order, which is placed once more with a new one.
//!
//! Failures come back as a sentence for the member: the ACME server's own problem detail when it
//! gave one, else what could not be reached.

use super::acme_account;
use aqs_core::cert_key::CertKeyCipher;
use aqs_core::keys::Keys;
use aqs_core::redis_conn::RedisConn;
use chrono::{DateTime, Utc};
use instant_acme::{
    Account, AccountBuilder, AuthorizationStatus, ChallengeType, Identifier, NewAccount, NewOrder, OrderStatus,
    RetryPolicy,
};
use sqlx::PgPool;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;

/// The problem type of a request signed by an account the server does not know.
const ACCOUNT_UNKNOWN: &str = "urn:ietf:params:acme:error:accountDoesNotExist";

/// How long a challenge answer stays in Redis: far beyond any validation.
const CHALLENGE_TTL_SECS: u64 = 3600;
/// How long one order may wait for validation and for the certificate.
const ORDER_TIMEOUT: Duration = Duration::from_secs(90);

/// A certificate obtained for a hostname.
#[derive(Clone, Debug)]
pub struct Issued {
    /// The chain, leaf first, PEM.
    pub cert_pem: String,
    /// The leaf's private key, PKCS#8 PEM (encrypted before it is stored).
    pub key_pem: String,
    pub not_before: DateTime<Utc>,
    pub not_after: DateTime<Utc>,
}

pub struct Acme {
    directory_url: String,
    contact: Option<String>,
    ca_file: Option<String>,
    /// The stored account, loaded (or registered) on first use and kept for the process's life,
    /// with its sealed credentials as stored.
    account: Mutex<Option<(Account, String)>>,
    /// Set when the server answered that it does not know the account.
    account_unknown: AtomicBool,
}

impl Acme {
    pub fn new(directory_url: &str, contact_email: &str, ca_file: &str) -> Self {
        let non_empty = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_owned());
        Self {
            directory_url: directory_url.to_owned(),
            contact: non_empty(contact_email).map(|email| format!("mailto:{email}")),
            ca_file: non_empty(ca_file),
            account: Mutex::new(None),
            account_unknown: AtomicBool::new(false),
        }
    }

    fn builder(&self) -> Result<AccountBuilder, String> {
        match &self.ca_file {
            Some(path) => Account::builder_with_root(path),
            None => Account::builder(),
        }
        .map_err(|err| format!("cannot set up the ACME client: {err}"))
    }

    /// The directory's account: this process's, else the stored one, else a new registration
    /// (stored for every replica). Called at the reconciler's start too, so a failure shows early.
    pub async fn account(&self, db: &PgPool, cipher: &CertKeyCipher) -> Result<Account, String> {
        let mut held = self.account.lock().await;
        if let Some((account, _)) = held.as_ref() {
            return Ok(account.clone());
        }
        let stored = match acme_account::load(db, cipher, &self.directory_url).await? {
            Some(stored) => stored,
            None => {
                let contact: Vec<&str> = self.contact.iter().map(String::as_str).collect();
                let new = NewAccount { contact: &contact, terms_of_service_agreed: true, only_return_existing: false };
                let (_, credentials) = self
                    .builder()?
                    .create(&new, self.directory_url.clone(), None)
                    .await
                    .map_err(|err| self.describe(err))?;
                tracing::info!(directory = %self.directory_url, "registered an ACME account");
                acme_account::store(db, cipher, &self.directory_url, &credentials).await?
            }
        };
        let account = self.builder()?.from_credentials(stored.credentials).await.map_err(|err| self.describe(err))?;
        *held = Some((account.clone(), stored.sealed));
        Ok(account)
    }

    /// Orders a certificate for `hostname`, answering its HTTP-01 challenge through Redis.
    pub async fn order(
        &self,
        db: &PgPool,
        cipher: &CertKeyCipher,
        redis: &mut RedisConn,
        keys: &Keys,
        hostname: &str,
    ) -> Result<Issued, String> {
        let account = self.account(db, cipher).await?;
        let result = self.order_with(&account, redis, keys, hostname).await;
        if result.is_err() && self.account_unknown.swap(false, Ordering::Relaxed) {
            // The server was reset (as a test server is) or dropped the account: every order with
            // it fails, so it is forgotten here and in PostgreSQL, and the order is placed once
            // more with a new registration (or the one another replica stored meanwhile).
            if let Some((_, sealed)) = self.account.lock().await.take() {
                tracing::warn!(directory = %self.directory_url, "the ACME server no longer knows our account");
                acme_account::forget(db, &self.directory_url, &sealed).await;
            }
            let account = self.account(db, cipher).await?;
            return self.order_with(&account, redis, keys, hostname).await;
        }
        result
    }

    async fn order_with(
        &self,
        account: &Account,
        redis: &mut RedisConn,
        keys: &Keys,
        hostname: &str,
    ) -> Result<Issued, String> {
        let identifiers = [Identifier::Dns(hostname.to_owned())];
        let mut order = account.new_order(&NewOrder::new(&identifiers)).await.map_err(|err| self.describe(err))?;
        let mut tokens = Vec::new();
        let mut authorizations = order.authorizations();
        while let Some(authz) = authorizations.next().await {
            let mut authz = authz.map_err(|err| self.describe(err))?;
            match authz.status {
                AuthorizationStatus::Valid => continue,
                AuthorizationStatus::Pending => {}
                status => return Err(format!("the ACME server holds the authorization of {hostname} as {status:?}")),
            }
            let mut challenge = authz
                .challenge(ChallengeType::Http01)
                .ok_or_else(|| format!("the ACME server offers no HTTP-01 challenge for {hostname}"))?;
            let key = keys.acme_challenge(&challenge.token);
            let value = challenge.key_authorization().as_str().to_owned();
            redis::cmd("SET")
                .arg(&key)
                .arg(value)
                .arg("EX")
                .arg(CHALLENGE_TTL_SECS)
                .query_async::<()>(redis)
                .await
                .map_err(|err| format!("cannot publish the ACME challenge (Redis): {err}"))?;
            tokens.push(key);
            challenge.set_ready().await.map_err(|err| self.describe(err))?;
        }
        let retries = RetryPolicy::new().initial_delay(Duration::from_millis(250)).backoff(1.5).timeout(ORDER_TIMEOUT);
        let status = order.poll_ready(&retries).await.map_err(|err| self.describe(err));
        let outcome = match status {
            Ok(OrderStatus::Ready) => self.finish(&mut order, hostname, &retries).await,
            Ok(_) => Err(validation_problem(&mut order, hostname).await),
            Err(reason) => Err(reason),
        };
        for key in tokens {
            if let Err(err) = redis::cmd("DEL").arg(&key).query_async::<()>(redis).await {
                tracing::debug!(error = %err, "could not remove an answered ACME challenge; it expires");
            }
        }
        outcome
    }

    async fn finish(
        &self,
        order: &mut instant_acme::Order,
        hostname: &str,
        retries: &RetryPolicy,
    ) -> Result<Issued, String> {
        let key = rcgen::KeyPair::generate().map_err(|err| format!("cannot generate a key: {err}"))?;
        let params = rcgen::CertificateParams::new(vec![hostname.to_owned()])
            .map_err(|err| format!("{hostname} cannot be put in a certificate request: {err}"))?;
        let csr = params.serialize_request(&key).map_err(|err| format!("cannot sign the request: {err}"))?;
        order.finalize_csr(csr.der()).await.map_err(|err| self.describe(err))?;
        let cert_pem = order.poll_certificate(retries).await.map_err(|err| self.describe(err))?;
        let (not_before, not_after) = validity(&cert_pem)?;
        Ok(Issued { cert_pem, key_pem: key.serialize_pem(), not_before, not_after })
    }

    /// The member-facing sentence for a failure of the ACME exchange.
    fn describe(&self, err: instant_acme::Error) -> String {
        match err {
            instant_acme::Error::Api(problem) => {
                if problem.r#type.as_deref() == Some(ACCOUNT_UNKNOWN) {
                    self.account_unknown.store(true, Ordering::Relaxed);
                }
                problem_text(&problem)
            }
            instant_acme::Error::Timeout(_) => "the ACME server did not finish validating in time".into(),
            other => format!("the ACME server at {} could not be reached: {other}", self.directory_url),
        }
    }
}

fn problem_text(problem: &instant_acme::Problem) -> String {
    let detail = problem.detail.clone().unwrap_or_else(|| "no detail given".into());
    let mut text = format!("the ACME server refused: {detail}");
    for sub in &problem.subproblems {
        if let Some(detail) = &sub.detail {
            text.push_str("; ");
            text.push_str(detail);
        }
    }
    text
}

/// The validation error of an order that went invalid, as the server reported it.
async fn validation_problem(order: &mut instant_acme::Order, hostname: &str) -> String {
    let mut authorizations = order.authorizations();
    while let Some(Ok(authz)) = authorizations.next().await {
        if let Some(problem) = authz.challenges.iter().find_map(|c| c.error.as_ref()) {
            return problem_text(problem);
        }
    }
    format!("the ACME server could not validate {hostname}")
}

/// The leaf certificate's validity period.
pub fn validity(chain_pem: &str) -> Result<(DateTime<Utc>, DateTime<Utc>), String> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    let leaf = CertificateDer::pem_slice_iter(chain_pem.as_bytes())
        .next()
        .ok_or("the ACME server sent no certificate")?
        .map_err(|err| format!("the certificate from the ACME server is not PEM: {err}"))?;
    let (_, cert) = x509_parser::parse_x509_certificate(&leaf)
        .map_err(|err| format!("the certificate from the ACME server does not parse: {err}"))?;
    let at = |t: x509_parser::time::ASN1Time| DateTime::<Utc>::from_timestamp(t.timestamp(), 0).unwrap_or_default();
    Ok((at(cert.validity().not_before), at(cert.validity().not_after)))
}
