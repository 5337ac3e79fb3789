//! Malformed HTTP framing in our error format. A request line or header hyper cannot parse, headers
//! past its buffer, or a URI past its limit never reach the router: hyper answers them itself, with
//! the bare status (400, 431, 414), `content-length: 0` and no body. [`JsonFramingErrors`] wraps a
//! connection's socket, recognises that automatic answer as hyper writes it, and writes the same
//! status with our `{"error", "message"}` body instead, so that every answer of the service has
//! one shape.
//!
//! Only hyper writes these: every answer of ours to a 4xx carries a body (JSON, or the console's
//! HTML), so a 400, 414 or 431 head with `content-length: 0` is hyper's parse-error answer, after
//! which hyper closes the connection.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A socket whose hyper parse-error answers are rewritten with a JSON body.
pub struct JsonFramingErrors<S> {
    inner: S,
    /// The rewritten answer being written, how much of it is out, and how many bytes of hyper's
    /// write it stands for (what the write reports once it is all out).
    pending: Option<(Vec<u8>, usize, usize)>,
}

impl<S> JsonFramingErrors<S> {
    pub fn new(inner: S) -> Self {
        Self { inner, pending: None }
    }
}

/// Our answer in place of hyper's automatic `head`, or `None` when `head` is anything else.
fn rewrite(head: &[u8]) -> Option<Vec<u8>> {
    let version = head.get(..9).filter(|v| v.starts_with(b"HTTP/1.") && v[8] == b' ')?;
    let (status, message) = match head.get(9..13)? {
        b"400 " => {
            ("400 Bad Request", "the request is not valid HTTP/1.1: its request line or a header cannot be parsed")
        }
        b"414 " => ("414 URI Too Long", "the request URI is longer than this server accepts"),
        b"431 " => (
            "431 Request Header Fields Too Large",
            "the request headers are larger than this server accepts, or too many",
        ),
        _ => return None,
    };
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let has_no_body = head[..end + 2].windows(21).any(|w| w.eq_ignore_ascii_case(b"\r\ncontent-length: 0\r\n"));
    if !has_no_body {
        return None;
    }
    // The messages are constants without quotes or backslashes: no escaping needed.
    let body = format!(r#"{{"error":"invalid_request","message":"{message}"}}"#);
    let mut answer = Vec::with_capacity(160 + body.len());
    answer.extend_from_slice(version);
    answer.extend_from_slice(status.as_bytes());
    answer.extend_from_slice(b"\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: ");
    answer.extend_from_slice(body.len().to_string().as_bytes());
    answer.extend_from_slice(b"\r\n\r\n");
    answer.extend_from_slice(body.as_bytes());
    Some(answer)
}

impl<S: AsyncRead + Unpin> AsyncRead for JsonFramingErrors<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for JsonFramingErrors<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.pending.is_none() {
            // hyper writes a head in one piece, at the start of a write.
            let first = bufs.iter().find(|b| !b.is_empty());
            match first.and_then(|head| rewrite(head)) {
                Some(answer) => this.pending = Some((answer, 0, bufs.iter().map(|b| b.len()).sum())),
                None => return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs),
            }
        }
        let (answer, written, stands_for) = this.pending.as_mut().expect("set above");
        while *written < answer.len() {
            let n = ready!(Pin::new(&mut this.inner).poll_write(cx, &answer[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        let stands_for = *stands_for;
        this.pending = None;
        Poll::Ready(Ok(stands_for))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_bodiless_parse_error_answers_are_rewritten() {
        let hyper = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let answer = String::from_utf8(rewrite(hyper).unwrap()).unwrap();
        assert!(answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"), "{answer}");
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())));
        assert!(body.starts_with(r#"{"error":"invalid_request","message":"the request headers"#), "{body}");
        assert!(
            rewrite(b"HTTP/1.0 400 Bad Request\r\ncontent-length: 0\r\n\r\n").unwrap().starts_with(b"HTTP/1.0 400")
        );
        for ours in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 52\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"{\"body\": \"HTTP/1.1 400 \"}",
        ] {
            assert!(rewrite(ours).is_none(), "{}", String::from_utf8_lossy(ours));
        }
    }
}
