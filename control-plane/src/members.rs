//! Members: the accounts that own queues. `MemberId` can only be obtained from a verified session
//! or a fresh sign-up/login, and every service function that touches tenant data takes it first.

use crate::timefmt;
use anyhow::bail;
use aqs_core::ApiResult;
use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

/// The authenticated member's id. No public constructor: holding one means someone proved who
/// they are (see `auth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct MemberId(Uuid);

impl MemberId {
    pub fn as_uuid(self) -> Uuid {
        self.0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Member,
    Operator,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Operator => "operator",
        }
    }

    fn parse(text: &str) -> Self {
        if text == "operator" { Role::Operator } else { Role::Member }
    }
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Member {
    #[schema(value_type = String, format = Uuid)]
    pub id: MemberId,
    pub email: String,
    pub role: Role,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub created_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
pub(crate) struct MemberRow {
    id: Uuid,
    email: String,
    role: String,
    created_at: DateTime<Utc>,
}

impl From<MemberRow> for Member {
    fn from(row: MemberRow) -> Self {
        Self { id: MemberId(row.id), email: row.email, role: Role::parse(&row.role), created_at: row.created_at }
    }
}

/// Inserts a member; a taken email (in any letter case) is a 409 (`From<sqlx::Error> for ApiError`).
pub(crate) async fn insert(
    db: &mut sqlx::PgConnection,
    email: &str,
    password_hash: &str,
    role: Role,
) -> ApiResult<Member> {
    Ok(sqlx::query_as::<_, MemberRow>(
        "INSERT INTO members (id, email, password_hash, role) VALUES ($1, $2, $3, $4)
         RETURNING id, email, role, created_at",
    )
    .bind(Uuid::new_v4())
    .bind(email)
    .bind(password_hash)
    .bind(role.as_str())
    .fetch_one(db)
    .await
    .map(Member::from)?)
}

/// The member with this (normalised) email and their password hash.
pub(crate) async fn find_with_hash(db: &PgPool, email: &str) -> ApiResult<Option<(Member, String)>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        member: MemberRow,
        password_hash: String,
    }
    let row = sqlx::query_as::<_, Row>(
        "SELECT id, email, role, created_at, password_hash FROM members
         WHERE lower(email) = lower($1) AND deleted_at IS NULL",
    )
    .bind(email)
    .fetch_optional(db)
    .await?;
    Ok(row.map(|row| (Member::from(row.member), row.password_hash)))
}

/// The member with this id, unless their account was deleted.
pub(crate) async fn find(db: &PgPool, id: Uuid) -> ApiResult<Option<Member>> {
    Ok(sqlx::query_as::<_, MemberRow>(
        "SELECT id, email, role, created_at FROM members WHERE id = $1 AND deleted_at IS NULL",
    )
    .bind(id)
    .fetch_optional(db)
    .await?
    .map(Member::from))
}

/// The password hash of live member `id`.
pub(crate) async fn password_hash(db: &PgPool, id: MemberId) -> ApiResult<Option<String>> {
    Ok(sqlx::query_scalar("SELECT password_hash FROM members WHERE id = $1 AND deleted_at IS NULL")
        .bind(id.as_uuid())
        .fetch_optional(db)
        .await?)
}

/// Turns the member's row into a tombstone: the id stays (billing's rows point at it), and the
/// personal data goes. No email (the address is free for a new sign-up, and nothing here can name
/// the person), no password hash (nothing logs in), only a random marker that says the row was
/// erased: random rather than a hash of the email, which guessing addresses would reverse.
pub(crate) async fn tombstone(tx: &mut sqlx::PgConnection, id: MemberId) -> ApiResult<()> {
    let marker = format!("erased_{}", Uuid::new_v4().simple());
    sqlx::query(
        "UPDATE members SET deleted_at = now(), email = NULL, password_hash = NULL, erasure_marker = $2
         WHERE id = $1",
    )
    .bind(id.as_uuid())
    .bind(marker)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Replaces the password hash of live member `id`; false when the member is gone.
pub(crate) async fn set_password_hash(tx: &mut sqlx::PgConnection, id: MemberId, hash: &str) -> ApiResult<bool> {
    let updated = sqlx::query("UPDATE members SET password_hash = $2 WHERE id = $1 AND deleted_at IS NULL")
        .bind(id.as_uuid())
        .bind(hash)
        .execute(tx)
        .await?
        .rows_affected();
    Ok(updated == 1)
}

/// Gives the member with `email` the operator role (`aqs admin grant-operator EMAIL`).
pub async fn grant_operator(db: &PgPool, email: &str) -> anyhow::Result<()> {
    let email = email.trim();
    let updated =
        sqlx::query("UPDATE members SET role = 'operator' WHERE lower(email) = lower($1) AND deleted_at IS NULL")
            .bind(email)
            .execute(db)
            .await?
            .rows_affected();
    if updated == 0 {
        bail!("no member has the email {email}; they must sign up first");
    }
    Ok(())
}
