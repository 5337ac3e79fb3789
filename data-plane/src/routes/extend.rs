//! `POST /extend`: a consumer's heartbeat. Moves each named lease's deadline to now +
//! `visibility_seconds` and answers a fresh receipt per extended lease, whose expiry covers the new
//! lease; a receipt whose delivery is no longer current gets `lease_lost`, as ack answers it.

use super::SMALL_BODY_LIMIT;
use super::receipts::{Decoded, ReceiptFailure};
use super::views::QueuePath;
use crate::QueueContext;
use crate::body;
use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::errors;
use aqs_core::limits;
use aqs_core::receipt::{Receipt, expiry_ms};
use aqs_core::time::{now_ms, rfc3339};
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Deserialize, ToSchema)]
pub struct ExtendRequest {
    /// 1 to 100 receipts from consume (or an earlier extend).
    #[schema(min_items = 1, max_items = 100)]
    receipts: Vec<String>,
    /// The new lease from now, 1 s to 12 h.
    #[schema(minimum = 1, maximum = 43200)]
    visibility_seconds: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ExtendAnswer {
    /// One per extended lease, in the order of the request.
    pub extended: Vec<Extended>,
    /// One per receipt that extended nothing.
    pub failed: Vec<ReceiptFailure>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Extended {
    /// The receipt as sent.
    pub receipt: String,
    /// A receipt for the same delivery that stays valid past the new deadline; the old one still
    /// acks until it expires.
    pub new_receipt: String,
    /// The new lease deadline: the message stays invisible until then.
    #[schema(format = DateTime)]
    pub visible_at: String,
}

errors!(ExtendErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found",
    "payload_too_large", "unsupported_media_type", "rate_limited", "service_unavailable", "replication_timeout");

/// Keep leases: each named lease ends `visibility_seconds` from now (consume scope).
#[utoipa::path(post, path = "/queue/v1/{slug}/extend", operation_id = "extend", tag = "consume", params(QueuePath),
    request_body = ExtendRequest,
    responses((status = 200, body = ExtendAnswer, description = "What each receipt did."), ExtendErrors),
    security(("queue_token" = [])))]
pub async fn extend(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<ExtendAnswer>> {
    let request: ExtendRequest = body::parse(&body::read(&headers, raw, SMALL_BODY_LIMIT, false).await?)?;
    let secs = request.visibility_seconds;
    if !(u64::from(limits::VISIBILITY_MIN_SECS)..=u64::from(limits::VISIBILITY_MAX_SECS)).contains(&secs) {
        return Err(ApiError::invalid(format!(
            "visibility_seconds must be {} to {}",
            limits::VISIBILITY_MIN_SECS,
            limits::VISIBILITY_MAX_SECS
        )));
    }
    let lease_ms = secs * 1000;
    let decoded = Decoded::new(&state, &ctx, request.receipts)?;
    let now = now_ms();
    let results =
        state.engine.charged(ctx.charge).extend(ctx.queue, &decoded.valid, &decoded.hints, lease_ms, now).await?;
    let mut answer = ExtendAnswer { extended: Vec::new(), failed: decoded.failed };
    let lease_ends = rfc3339(now + lease_ms);
    let rows = decoded.valid.into_iter().zip(decoded.hints).zip(decoded.valid_texts);
    for (ok, ((receipt, hint), text)) in results.into_iter().zip(rows) {
        if !ok {
            answer.failed.push(ReceiptFailure::lease_lost(text));
            continue;
        }
        let fresh = Receipt { expires_at_ms: expiry_ms(now, lease_ms), ..receipt };
        answer.extended.push(Extended {
            receipt: text,
            new_receipt: state.receipts.encode_with(&fresh, hint),
            visible_at: lease_ends.clone(),
        });
    }
    Ok(Json(answer))
}
