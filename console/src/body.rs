//! Message bodies as the Messages and Dead letters views show them: exactly as sent (text as it
//! is, bytes as base64), never re-encoded, so a JSON body keeps its key order and spacing. The
//! pretty-print toggle re-indents JSON text token by token, keeping every key where it was.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// A body for the page: text when it is UTF-8, else base64.
pub(crate) struct ShownBody {
    pub text: String,
    /// "text" or "base64".
    pub encoding: &'static str,
    /// The body is JSON (so it can be pretty-printed).
    pub json: bool,
}

/// The whole body, exactly.
pub(crate) fn exact(body: &[u8]) -> ShownBody {
    match std::str::from_utf8(body) {
        Ok(text) => ShownBody {
            json: serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok(),
            text: text.to_owned(),
            encoding: "text",
        },
        Err(_) => ShownBody { text: STANDARD.encode(body), encoding: "base64", json: false },
    }
}

/// A run of a body shown exactly: text as it is, or one control character as a visible marker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BodyPart {
    pub text: String,
    /// `Some(name)`: `text` is the marker of this control character (its name, for the title).
    pub control: Option<String>,
}

/// `text` cut into runs, each control character but newline and tab its own marked run: a browser
/// shows NUL as nothing and a CR as a line break (HTML parsing turns CR LF into LF), so "exactly as
/// sent" would hide them. Each is written as its escape, in ASCII so that every font has it: NUL
/// `\0`, CR `\r`, the other C0 controls and DEL `\xNN`, the C1 controls `\u0085`; the page styles
/// the markers apart from the text (a literal backslash in the body is plain text). A CR LF keeps
/// its line break after the `\r`.
pub(crate) fn marked(text: &str) -> Vec<BodyPart> {
    let mut parts = Vec::new();
    let mut run = String::new();
    for c in text.chars() {
        let marker = match c {
            '\n' | '\t' => None,
            '\u{0}' => Some("\\0".to_owned()),
            '\r' => Some("\\r".to_owned()),
            '\u{1}'..='\u{1f}' | '\u{7f}' => Some(format!("\\x{:02X}", c as u32)),
            '\u{80}'..='\u{9f}' => Some(format!("\\u{:04X}", c as u32)),
            _ => None,
        };
        match marker {
            Some(marker) => {
                if !run.is_empty() {
                    parts.push(BodyPart { text: std::mem::take(&mut run), control: None });
                }
                parts.push(BodyPart { text: marker, control: Some(control_name(c)) });
            }
            None => run.push(c),
        }
    }
    if !run.is_empty() {
        parts.push(BodyPart { text: run, control: None });
    }
    parts
}

/// "NUL (0x00)", "CR (0x0D)", "U+0085".
fn control_name(c: char) -> String {
    const NAMES: [&str; 32] = [
        "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "TAB", "LF", "VT", "FF", "CR", "SO", "SI", "DLE",
        "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US",
    ];
    match c as u32 {
        n @ 0..=0x1f => format!("{} (0x{n:02X})", NAMES[n as usize]),
        0x7f => "DEL (0x7F)".to_owned(),
        n => format!("U+{n:04X}"),
    }
}

/// The first bytes of a body (`body` of `total` bytes) on one line: the text as sent with its
/// whitespace runs folded, an ellipsis when cut; bytes that are no text are described.
pub(crate) fn one_line(body: &[u8], total: u64) -> String {
    let partial = (body.len() as u64) < total;
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        // Cut inside a multi-byte character: still text up to the cut.
        Err(err) if partial && err.error_len().is_none() => {
            std::str::from_utf8(&body[..err.valid_up_to()]).unwrap_or("")
        }
        Err(_) => return format!("{total} bytes of binary data"),
    };
    let mut line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if partial {
        line.push('…');
    }
    line
}

/// JSON text re-indented by two spaces, keys and values in their order, strings untouched.
/// Call with text that parses as JSON.
pub(crate) fn pretty_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                // An empty object or array stays on one line.
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    out.push(chars.next().unwrap_or(' '));
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_keeps_key_order_and_spacing() {
        let shown = exact(br#"{"b":1,  "a":2}"#);
        assert_eq!((shown.text.as_str(), shown.encoding, shown.json), (r#"{"b":1,  "a":2}"#, "text", true));
        let shown = exact(&[0xff, 0x00]);
        assert_eq!((shown.text.as_str(), shown.encoding), ("/wA=", "base64"));
    }

    #[test]
    fn pretty_json_keeps_order_and_strings() {
        let pretty = pretty_json(r#"{"b":1,"a":[2,{}],"s":"x, {y}: \"z\""}"#);
        assert_eq!(pretty, "{\n  \"b\": 1,\n  \"a\": [\n    2,\n    {}\n  ],\n  \"s\": \"x, {y}: \\\"z\\\"\"\n}");
        assert!(serde_json::from_str::<serde_json::Value>(&pretty).is_ok());
    }

    #[test]
    fn control_characters_get_visible_markers_and_the_rest_stays() {
        let parts = marked("a\0b\r\nc\td\u{7f}\u{85}");
        let shown: String = parts.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(shown, "a\\0b\\r\nc\td\\x7F\\u0085");
        let names: Vec<&str> = parts.iter().filter_map(|p| p.control.as_deref()).collect();
        assert_eq!(names, ["NUL (0x00)", "CR (0x0D)", "DEL (0x7F)", "U+0085"]);
        assert_eq!(marked("plain"), vec![BodyPart { text: "plain".into(), control: None }]);
    }

    #[test]
    fn one_line_folds_and_says_when_cut() {
        assert_eq!(one_line(b"{\n  \"b\": 1}", 11), "{ \"b\": 1}");
        assert_eq!(one_line("hé".as_bytes(), 3), "hé");
        assert_eq!(one_line(&"é".as_bytes()[..1], 2), "…");
        assert_eq!(one_line(&[0xff, 0xfe], 2), "2 bytes of binary data");
    }
}
