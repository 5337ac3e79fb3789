//! Reading the flat arrays the scripts return, one value at a time. A reply the scripts never give
//! (an unknown status word, a short array, a wrong type) is [`StorageError::Unexpected`] naming the
//! script, answered 500 and logged once where it is answered: never taken for a missing queue.

use crate::error::StorageError;
use crate::error::StorageResult;
use anyhow::{Context, anyhow};
use redis::Value;

/// The status word a script's reply opens with (see each script's `Returns` header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Ok,
    NoQueue,
    Paused,
    Storage,
    TooLarge,
    Conflict,
}

impl Status {
    fn parse(word: &[u8]) -> Option<Self> {
        Some(match word {
            b"ok" => Self::Ok,
            b"no_queue" => Self::NoQueue,
            b"paused" => Self::Paused,
            b"storage" => Self::Storage,
            b"too_large" => Self::TooLarge,
            b"conflict" => Self::Conflict,
            _ => return None,
        })
    }
}

/// A status `script` returned that the caller has no meaning for.
pub(crate) fn unexpected(script: &str, status: Status) -> StorageError {
    anyhow!("{script} returned the status {status:?}, which it never returns here").into()
}

pub(crate) struct Reply(std::vec::IntoIter<Value>);

impl Reply {
    pub fn new(value: Value) -> StorageResult<Self> {
        match value {
            Value::Array(items) => Ok(Self(items.into_iter())),
            other => Err(anyhow!("script returned {other:?}, expected an array").into()),
        }
    }

    /// The opening status word of `script`'s reply; an unknown word is an internal error.
    pub fn status(&mut self, script: &str) -> StorageResult<Status> {
        let word = self.bytes()?;
        Status::parse(&word)
            .ok_or_else(|| anyhow!("{script} returned the unknown status {:?}", String::from_utf8_lossy(&word)).into())
    }

    pub fn remaining(&self) -> usize {
        self.0.len()
    }

    fn next(&mut self) -> StorageResult<Value> {
        Ok(self.0.next().context("script reply is shorter than expected")?)
    }

    pub fn bytes(&mut self) -> StorageResult<Vec<u8>> {
        match self.next()? {
            Value::BulkString(bytes) => Ok(bytes),
            Value::SimpleString(text) => Ok(text.into_bytes()),
            Value::Int(n) => Ok(n.to_string().into_bytes()),
            Value::Nil => Ok(Vec::new()),
            other => Err(anyhow!("script returned {other:?}, expected a string").into()),
        }
    }

    pub fn text(&mut self) -> StorageResult<String> {
        Ok(String::from_utf8(self.bytes()?).context("script returned a non-UTF-8 string")?)
    }

    pub fn int(&mut self) -> StorageResult<i64> {
        match self.next()? {
            Value::Int(n) => Ok(n),
            Value::BulkString(bytes) => Ok(std::str::from_utf8(&bytes)
                .ok()
                .and_then(|t| t.parse().ok())
                .context("script returned a non-numeric string")?),
            other => Err(anyhow!("script returned {other:?}, expected an integer").into()),
        }
    }

    pub fn uint(&mut self) -> StorageResult<u64> {
        Ok(u64::try_from(self.int()?).unwrap_or(0))
    }

    /// An integer, or `None` for the empty string the scripts use for "none".
    pub fn opt_uint(&mut self) -> StorageResult<Option<u64>> {
        match self.next()? {
            Value::Int(n) => Ok(Some(u64::try_from(n).unwrap_or(0))),
            Value::BulkString(bytes) if bytes.is_empty() => Ok(None),
            Value::BulkString(bytes) => Ok(std::str::from_utf8(&bytes).ok().and_then(|t| t.parse().ok())),
            Value::Nil => Ok(None),
            other => Err(anyhow!("script returned {other:?}, expected an integer").into()),
        }
    }

    /// A string, or `None` when empty.
    pub fn opt_text(&mut self) -> StorageResult<Option<String>> {
        let text = self.text()?;
        Ok((!text.is_empty()).then_some(text))
    }
}

/// A script that returns one integer per item, or a single integer.
pub(crate) fn ints(value: Value) -> StorageResult<Vec<i64>> {
    match value {
        Value::Int(n) => Ok(vec![n]),
        other => {
            let mut reply = Reply::new(other)?;
            let mut out = Vec::with_capacity(reply.remaining());
            while reply.remaining() > 0 {
                out.push(reply.int()?);
            }
            Ok(out)
        }
    }
}

/// A chunked script's reply (purge, DLQ replay and purge): `{done, chunk size used}`.
pub(crate) fn chunk_counts(script: &str, value: Value) -> StorageResult<(u64, u64)> {
    match ints(value)?.as_slice() {
        &[done, chunk] => Ok((u64::try_from(done).unwrap_or(0), u64::try_from(chunk).unwrap_or(0))),
        other => Err(anyhow!("{script} returned {other:?}, expected two integers").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(items: &[&str]) -> Value {
        Value::Array(items.iter().map(|i| Value::BulkString(i.as_bytes().to_vec())).collect())
    }

    #[test]
    fn known_status_words_parse() {
        for (word, status) in [
            ("ok", Status::Ok),
            ("no_queue", Status::NoQueue),
            ("paused", Status::Paused),
            ("storage", Status::Storage),
            ("too_large", Status::TooLarge),
            ("conflict", Status::Conflict),
        ] {
            assert_eq!(Reply::new(array(&[word])).unwrap().status("t.lua").unwrap(), status);
        }
    }

    #[test]
    fn a_surprise_is_an_internal_error_not_a_missing_queue() {
        let err = Reply::new(array(&["ERR something"])).unwrap().status("consume.lua").unwrap_err();
        assert!(format!("{err:?}").contains("consume.lua"), "{err:?}");
        assert_eq!(aqs_core::ApiError::from(err).status(), axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        let err = Reply::new(Value::Int(3)).err().expect("not an array");
        assert!(matches!(err, StorageError::Unexpected(_)));
        let err = Reply::new(array(&[])).unwrap().status("stats.lua").unwrap_err();
        assert!(matches!(err, StorageError::Unexpected(_)));
        assert!(matches!(unexpected("stats.lua", Status::Paused), StorageError::Unexpected(_)));
    }

    #[test]
    fn int_lists_refuse_other_types() {
        assert_eq!(ints(Value::Array(vec![Value::Int(1), Value::Int(0)])).unwrap(), vec![1, 0]);
        assert!(matches!(ints(array(&["x"])).unwrap_err(), StorageError::Unexpected(_)));
    }
}
