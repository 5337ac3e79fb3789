//! A delivered body decoded by its content type, as the Worker trigger decodes it:
//! `application/json`, `*+json` or none → JSON (a body that does not parse stays text),
//! `text/*` → text, anything else → bytes.

use base64::Engine as _;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Json(Value),
    Text(String),
    Bytes(Vec<u8>),
}

impl Body {
    pub fn decode(bytes: Vec<u8>, content_type: &str) -> Self {
        let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        if essence.is_empty() || essence == "application/json" || essence.ends_with("+json") {
            return match serde_json::from_slice(&bytes) {
                Ok(value) => Self::Json(value),
                Err(_) => Self::Text(String::from_utf8_lossy(&bytes).into_owned()),
            };
        }
        if essence.starts_with("text/") {
            return Self::Text(String::from_utf8_lossy(&bytes).into_owned());
        }
        Self::Bytes(bytes)
    }

    /// `body_base64` of a consume answer, decoded.
    pub fn from_base64(encoded: &str, content_type: &str) -> Self {
        match base64::engine::general_purpose::STANDARD.decode(encoded) {
            Ok(bytes) => Self::decode(bytes, content_type),
            Err(_) => Self::Text(encoded.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_by_content_type() {
        let json = br#"{"a":1}"#.to_vec();
        assert_eq!(Body::decode(json.clone(), "application/json"), Body::Json(serde_json::json!({"a": 1})));
        assert_eq!(Body::decode(json.clone(), ""), Body::Json(serde_json::json!({"a": 1})));
        assert_eq!(
            Body::decode(json.clone(), "application/vnd.x+json; charset=utf-8"),
            Body::Json(serde_json::json!({"a": 1}))
        );
        assert_eq!(Body::decode(b"nope {".to_vec(), "application/json"), Body::Text("nope {".into()));
        assert_eq!(Body::decode(b"hi".to_vec(), "text/plain"), Body::Text("hi".into()));
        assert_eq!(Body::decode(vec![0, 255], "application/octet-stream"), Body::Bytes(vec![0, 255]));
    }
}
