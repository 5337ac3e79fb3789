//! Reading the flat arrays the scripts return, one value at a time.

use anyhow::{Context, anyhow};
use aqs_core::error::ApiResult;
use redis::Value;

pub(crate) struct Reply(std::vec::IntoIter<Value>);

impl Reply {
    pub fn new(value: Value) -> ApiResult<Self> {
        match value {
            Value::Array(items) => Ok(Self(items.into_iter())),
            other => Err(anyhow!("script returned {other:?}, expected an array").into()),
        }
    }

    pub fn remaining(&self) -> usize {
        self.0.len()
    }

    fn next(&mut self) -> ApiResult<Value> {
        Ok(self.0.next().context("script reply is shorter than expected")?)
    }

    pub fn bytes(&mut self) -> ApiResult<Vec<u8>> {
        match self.next()? {
            Value::BulkString(bytes) => Ok(bytes),
            Value::SimpleString(text) => Ok(text.into_bytes()),
            Value::Int(n) => Ok(n.to_string().into_bytes()),
            Value::Nil => Ok(Vec::new()),
            other => Err(anyhow!("script returned {other:?}, expected a string").into()),
        }
    }

    pub fn text(&mut self) -> ApiResult<String> {
        Ok(String::from_utf8(self.bytes()?).context("script returned a non-UTF-8 string")?)
    }

    pub fn int(&mut self) -> ApiResult<i64> {
        match self.next()? {
            Value::Int(n) => Ok(n),
            Value::BulkString(bytes) => Ok(std::str::from_utf8(&bytes)
                .ok()
                .and_then(|t| t.parse().ok())
                .context("script returned a non-numeric string")?),
            other => Err(anyhow!("script returned {other:?}, expected an integer").into()),
        }
    }

    pub fn uint(&mut self) -> ApiResult<u64> {
        Ok(u64::try_from(self.int()?).unwrap_or(0))
    }

    /// An integer, or `None` for the empty string the scripts use for "none".
    pub fn opt_uint(&mut self) -> ApiResult<Option<u64>> {
        match self.next()? {
            Value::Int(n) => Ok(Some(u64::try_from(n).unwrap_or(0))),
            Value::BulkString(bytes) if bytes.is_empty() => Ok(None),
            Value::BulkString(bytes) => Ok(std::str::from_utf8(&bytes).ok().and_then(|t| t.parse().ok())),
            Value::Nil => Ok(None),
            other => Err(anyhow!("script returned {other:?}, expected an integer").into()),
        }
    }

    /// A string, or `None` when empty.
    pub fn opt_text(&mut self) -> ApiResult<Option<String>> {
        let text = self.text()?;
        Ok((!text.is_empty()).then_some(text))
    }
}

/// A script that returns one integer per item, or a single integer.
pub(crate) fn ints(value: Value) -> ApiResult<Vec<i64>> {
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
