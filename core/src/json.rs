//! `ApiJson<T>`: axum's `Json` with our error format. A body that is not JSON, has the wrong
//! content type, is too large or has a field of the wrong type answers with a 4xx `ApiError`
//! naming the problem, never with axum's plain-text rejection.

use crate::error::ApiError;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(rejection_to_error(rejection)),
        }
    }
}

fn rejection_to_error(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => {
            ApiError::UnsupportedMediaType("send the body as JSON with Content-Type: application/json".into())
        }
        JsonRejection::JsonDataError(err) => ApiError::invalid(format!("invalid field: {}", err.body_text())),
        JsonRejection::JsonSyntaxError(err) => ApiError::invalid(format!("malformed JSON: {}", err.body_text())),
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::PayloadTooLarge("the request body is larger than this route accepts".into())
        }
        other => ApiError::invalid(other.body_text()),
    }
}

impl<T: Serialize> IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}
