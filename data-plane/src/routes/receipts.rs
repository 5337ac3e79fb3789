//! The receipts of an ack, nack or extend request: checked in Rust (tag, expiry, queue) before
//! Redis is asked anything, and the per-receipt failures those routes answer.

use crate::QueueContext;
use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::limits;
use aqs_core::receipt::{AckHint, Receipt, ReceiptError};
use aqs_core::time::now_ms;
use serde::Serialize;

/// A receipt that did nothing, with why: `receipt_invalid` or `lease_lost`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReceiptFailure {
    /// The receipt as sent.
    pub receipt: String,
    /// `receipt_invalid` (not one of ours, another queue's, or expired) or `lease_lost` (the
    /// delivery is no longer current).
    #[schema(value_type = String)]
    pub error: &'static str,
    #[schema(value_type = String)]
    pub message: &'static str,
}

impl ReceiptFailure {
    fn invalid(receipt: String, message: &'static str) -> Self {
        Self { receipt, error: "receipt_invalid", message }
    }

    /// The receipt's delivery is no longer the current one.
    pub fn lease_lost(receipt: String) -> Self {
        Self {
            receipt,
            error: "lease_lost",
            message: "this delivery is no longer current: the message was redelivered, returned, acknowledged or removed",
        }
    }
}

/// The request's receipts, split into those this service issued for this queue (still unexpired)
/// and the failures.
pub struct Decoded {
    pub valid: Vec<Receipt>,
    /// The version 2 receipts' hints, one per `valid` receipt.
    pub hints: Vec<Option<AckHint>>,
    pub valid_texts: Vec<String>,
    pub failed: Vec<ReceiptFailure>,
}

impl Decoded {
    pub fn new(state: &DataPlane, ctx: &QueueContext, receipts: Vec<String>) -> ApiResult<Self> {
        if receipts.is_empty() || receipts.len() > limits::ACK_MAX_RECEIPTS {
            return Err(ApiError::invalid(format!("receipts must hold 1 to {} receipts", limits::ACK_MAX_RECEIPTS)));
        }
        let now = now_ms();
        let mut out = Self { valid: Vec::new(), hints: Vec::new(), valid_texts: Vec::new(), failed: Vec::new() };
        for text in receipts {
            match state.receipts.decode_with_hint(&text, now) {
                Ok((receipt, hint)) if receipt.queue == ctx.queue => {
                    out.valid.push(receipt);
                    out.hints.push(hint);
                    out.valid_texts.push(text);
                }
                Ok(_) => out.failed.push(ReceiptFailure::invalid(text, "the receipt belongs to another queue")),
                Err(ReceiptError::Expired) => out.failed.push(ReceiptFailure::invalid(text, "the receipt has expired")),
                Err(ReceiptError::Malformed) => {
                    out.failed.push(ReceiptFailure::invalid(text, "the receipt is not one this service issued"))
                }
            }
        }
        Ok(out)
    }
}
