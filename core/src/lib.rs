//! Types shared by every AQS role.
//!
//! The control plane, the data plane and the console agree on these: the token format, the receipt
//! codec, the limits of the product, the names of every Redis key, the records the control plane
//! projects into Redis, the one API error type and the configuration.

pub mod cert_key;
pub mod client_addr;
pub mod config;
pub mod config_values;
pub mod error;
pub mod hostname;
pub mod ids;
pub mod json;
pub mod keys;
pub mod limits;
pub mod metrics;
pub mod openapi;
pub mod projection;
pub mod push;
pub mod query;
pub mod receipt;
pub mod redis_conn;
pub mod redis_probe;
pub mod redis_sentinel;
pub mod secret;
pub mod settings;
pub mod slug;
#[cfg(feature = "postgres")]
mod sql_error;
pub mod time;
pub mod token;

pub use error::{ApiError, ApiResult};
pub use json::ApiJson;
pub use query::ApiQuery;
