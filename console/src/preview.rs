//! Message body previews: JSON pretty-printed, text as it is, anything else described with a
//! short hex dump. Long bodies are cut at a character boundary and say so.

use aqs_data_plane::engine::PREVIEW_BYTES;

/// Characters of a preview on the Messages tab.
pub(crate) const MESSAGES_PREVIEW_CHARS: usize = 2000;

#[derive(Clone, Debug)]
pub(crate) struct BodyPreview {
    pub text: String,
    /// "json", "text" or "binary": a CSS class and a label.
    pub kind: &'static str,
    /// Part of the body is not shown.
    pub truncated: bool,
}

/// A preview of `body`, which is the first `body.len()` of `total_bytes` bytes.
pub(crate) fn preview(body: &[u8], content_type: &str, total_bytes: u64, max_chars: usize) -> BodyPreview {
    let partial = (body.len() as u64) < total_bytes;
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        // A preview cut inside a multi-byte character is still text up to the cut.
        Err(err) if partial && err.error_len().is_none() => {
            std::str::from_utf8(&body[..err.valid_up_to()]).unwrap_or("")
        }
        Err(_) => return binary(body, total_bytes),
    };
    let looks_json = content_type.contains("json") || text.trim_start().starts_with(['{', '[']);
    let (text, kind) = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) if looks_json && !partial => {
            (serde_json::to_string_pretty(&value).unwrap_or_else(|_| text.to_owned()), "json")
        }
        _ if looks_json => (text.to_owned(), "json"),
        _ => (text.to_owned(), "text"),
    };
    let cut: String = text.chars().take(max_chars).collect();
    let truncated = partial || cut.len() < text.len();
    BodyPreview { text: cut, kind, truncated }
}

/// A dead letter's preview: the engine keeps its first `PREVIEW_BYTES` bytes.
pub(crate) fn dead_letter(body: &[u8], content_type: &str, total_bytes: u64) -> BodyPreview {
    preview(body, content_type, total_bytes, PREVIEW_BYTES)
}

fn binary(body: &[u8], total_bytes: u64) -> BodyPreview {
    const SHOWN: usize = 32;
    let hex: Vec<String> = body.iter().take(SHOWN).map(|b| format!("{b:02x}")).collect();
    BodyPreview {
        text: format!("{total_bytes} bytes of binary data: {}", hex.join(" ")),
        kind: "binary",
        truncated: total_bytes as usize > SHOWN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_pretty_printed() {
        let p = preview(br#"{"a":1,"b":[2]}"#, "application/json", 15, 2000);
        assert_eq!(p.kind, "json");
        assert!(p.text.contains("\n  \"a\": 1"), "{}", p.text);
        assert!(!p.truncated);
    }

    #[test]
    fn partial_and_long_bodies_say_so() {
        let p = preview(br#"{"a":"#, "application/json", 100, 2000);
        assert!(p.truncated);
        assert_eq!(p.text, r#"{"a":"#);
        let p = preview("héllo".as_bytes(), "text/plain", 6, 3);
        assert_eq!(p.text, "hél");
        assert!(p.truncated);
        let p = preview(&"é".as_bytes()[..1], "text/plain", 2, 10);
        assert_eq!((p.text.as_str(), p.kind), ("", "text"));
    }

    #[test]
    fn binary_is_described() {
        let p = preview(&[0xff, 0x00, 0x10], "application/octet-stream", 3, 2000);
        assert_eq!(p.kind, "binary");
        assert_eq!(p.text, "3 bytes of binary data: ff 00 10");
    }
}
