//! A lean HTTP/1.1 client: one `Conn` is one keep-alive TCP connection driven by hyper, with no
//! pool, so a scenario opens exactly the connections it says it uses and the generator spends as
//! little of the shared CPU as it can. Bodies and headers are built once and cloned (`Bytes` and
//! `HeaderValue` clones are reference counts). The floor and AQS are driven by this same client.

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use tokio::net::TcpStream;

/// Where requests go: the socket address and the `Host` header of a base URL.
#[derive(Debug, Clone)]
pub struct Target {
    addr: SocketAddr,
    host: HeaderValue,
}

impl Target {
    /// `http://host:port` (a trailing path is ignored; only plain HTTP on loopback is measured).
    pub async fn parse(base_url: &str) -> anyhow::Result<Self> {
        let rest = base_url.strip_prefix("http://").context("the base URL must start with http://")?;
        let authority = rest.split('/').next().unwrap_or(rest);
        let addr = tokio::net::lookup_host(authority)
            .await
            .with_context(|| format!("cannot resolve {authority}"))?
            .next()
            .with_context(|| format!("{authority} resolves to nothing"))?;
        Ok(Self { addr, host: HeaderValue::from_str(authority)? })
    }

    pub async fn connect(&self) -> anyhow::Result<Conn> {
        Conn::open(self.clone()).await
    }

    /// `http://host:port`, as the base URL named it.
    pub fn origin(&self) -> String {
        format!("http://{}", self.host.to_str().unwrap_or_default())
    }
}

/// One HTTP/1.1 connection; reopened transparently if the server closed it while idle.
pub struct Conn {
    target: Target,
    sender: SendRequest<Full<Bytes>>,
}

/// A request to send: path, bearer header and pre-serialised JSON body.
#[derive(Clone)]
pub struct Call {
    pub method: Method,
    pub path: Uri,
    pub auth: Option<HeaderValue>,
    pub body: Bytes,
}

impl Call {
    pub fn post(path: &str, auth: Option<&HeaderValue>, body: impl Into<Bytes>) -> anyhow::Result<Self> {
        Ok(Self { method: Method::POST, path: path.parse()?, auth: auth.cloned(), body: body.into() })
    }

    pub fn get(path: &str, auth: Option<&HeaderValue>) -> anyhow::Result<Self> {
        Ok(Self { method: Method::GET, path: path.parse()?, auth: auth.cloned(), body: Bytes::new() })
    }

    /// The same call with another body.
    pub fn with_body(&self, body: impl Into<Bytes>) -> Self {
        Self { body: body.into(), ..self.clone() }
    }
}

/// `Bearer <secret>` as a header value.
pub fn bearer(secret: &str) -> anyhow::Result<HeaderValue> {
    Ok(HeaderValue::from_str(&format!("Bearer {secret}"))?)
}

impl Conn {
    async fn open(target: Target) -> anyhow::Result<Self> {
        let sender = handshake(&target).await?;
        Ok(Self { target, sender })
    }

    /// Sends `call` and reads the whole answer.
    pub async fn send(&mut self, call: &Call) -> anyhow::Result<(StatusCode, Bytes)> {
        if self.sender.is_closed() {
            self.sender = handshake(&self.target).await?;
        }
        let mut req = Request::builder()
            .method(call.method.clone())
            .uri(call.path.clone())
            .header(HOST, self.target.host.clone())
            .body(Full::new(call.body.clone()))?;
        let headers = req.headers_mut();
        if let Some(auth) = &call.auth {
            headers.insert(AUTHORIZATION, auth.clone());
        }
        if call.method == Method::POST || !call.body.is_empty() {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        self.sender.ready().await.context("connection closed")?;
        let response = self.sender.send_request(req).await.context("request failed")?;
        let status = response.status();
        let body = response.into_body().collect().await.context("reading the answer")?.to_bytes();
        Ok((status, body))
    }

    /// Sends `call` and fails unless the answer is `expected`.
    pub async fn expect(&mut self, call: &Call, expected: StatusCode) -> anyhow::Result<Bytes> {
        let (status, body) = self.send(call).await?;
        if status != expected {
            bail!("{} {} answered {status}: {}", call.method, call.path, String::from_utf8_lossy(&body));
        }
        Ok(body)
    }
}

async fn handshake(target: &Target) -> anyhow::Result<SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(target.addr).await.with_context(|| format!("cannot connect to {}", target.addr))?;
    // Requests are small and latency is measured: never wait for Nagle.
    stream.set_nodelay(true)?;
    let (sender, connection) = http1::Builder::new().handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        // A broken connection shows up as an error on the next request, which counts it.
        if let Err(err) = connection.await {
            drop(err);
        }
    });
    Ok(sender)
}
