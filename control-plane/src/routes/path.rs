//! `ApiPath<T>`: axum's `Path` with our error format. A path segment that cannot be decoded (bad
//! percent-encoding) names nothing we have, so it is a 404 in `{error, message}` form, not axum's
//! plain-text 400.

use aqs_core::ApiError;
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

pub(super) struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(_) => Err(ApiError::not_found("nothing exists at this path")),
        }
    }
}
