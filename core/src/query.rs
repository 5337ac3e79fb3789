//! `ApiQuery<T>`: a query string parsed into the struct that documents it in the OpenAPI document
//! (the same struct derives `IntoParams`), so that what is documented and what is parsed cannot
//! drift apart. A query that does not parse is a 400 `invalid_request` naming the parameter, in our
//! error format, never axum's plain-text rejection. Unknown parameters are ignored, as browsers and
//! proxies add their own.

use crate::error::ApiError;
use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::try_from_uri(&parts.uri) {
            Ok(Query(value)) => Ok(Self(value)),
            Err(rejection) => Err(ApiError::invalid(format!("query string: {}", rejection.body_text()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;
    use serde::Deserialize;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Limit {
        limit: Option<u32>,
    }

    async fn parse(uri: &str) -> Result<Limit, ApiError> {
        let (mut parts, ()) = Request::builder().uri(uri).body(()).unwrap().into_parts();
        ApiQuery::<Limit>::from_request_parts(&mut parts, &()).await.map(|ApiQuery(limit)| limit)
    }

    #[tokio::test]
    async fn a_query_parses_into_its_struct_and_a_bad_one_names_the_parameter() {
        assert_eq!(parse("/x").await.unwrap(), Limit { limit: None });
        assert_eq!(parse("/x?limit=7&utm_source=mail").await.unwrap(), Limit { limit: Some(7) });
        let err = parse("/x?limit=seven").await.unwrap_err();
        assert_eq!(err.code(), "invalid_request");
        assert!(err.to_string().contains("limit"), "{err}");
    }
}
