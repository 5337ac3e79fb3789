//! Opening a connection to a member's handler: the address through the SSRF guard (`ssrf`), TCP
//! with Nagle off, TLS for `https` (rustls with ring, the webpki roots, HTTP/1.1 by ALPN), then
//! hyper's HTTP/1.1 handshake. The connection's I/O runs on a task of its own; what comes back is
//! the sender `deliver` keeps for the next request to the same handler.

use super::ssrf::{self, Refused, Unresolved};
use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use url::Url;

/// How long opening a connection (every address the name has, then TLS) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The sending half of one keep-alive HTTP/1.1 connection to a handler.
pub type Sender = SendRequest<Full<Bytes>>;

/// Why no connection could be opened.
#[derive(Debug)]
pub enum NotConnected {
    /// The SSRF guard refused every address of the handler.
    Refused(Refused),
    /// Resolution, TCP, TLS or the handshake failed: the text says which and why.
    Failed(String),
    TimedOut,
}

/// Opens connections to handlers; one per process, shared by every dispatcher.
pub struct Connector {
    allow_private: bool,
    tls: TlsConnector,
}

impl Connector {
    pub fn new(allow_private: bool) -> Self {
        Self::trusting(allow_private, rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() })
    }

    fn trusting(allow_private: bool, roots: rustls::RootCertStore) -> Self {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Self { allow_private, tls: TlsConnector::from(Arc::new(config)) }
    }

    /// A new connection to `url`'s origin.
    pub async fn open(&self, url: &Url) -> Result<Sender, NotConnected> {
        match tokio::time::timeout(CONNECT_TIMEOUT, self.open_now(url)).await {
            Ok(opened) => opened,
            Err(_) => Err(NotConnected::TimedOut),
        }
    }

    async fn open_now(&self, url: &Url) -> Result<Sender, NotConnected> {
        let port = url.port_or_known_default().ok_or_else(|| failed("the URL has no port", ""))?;
        let addresses = self.addresses(url, port).await?;
        let tcp = connect_any(&addresses).await?;
        tcp.set_nodelay(true).ok();
        if url.scheme() != "https" {
            return handshake(tcp).await;
        }
        let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_owned()).map_err(|err| failed("bad TLS server name", err))?;
        let tls = self.tls.connect(name, tcp).await.map_err(|err| failed("TLS handshake failed", err))?;
        handshake(tls).await
    }

    /// The addresses the handler may be reached at: an IP literal as it is, a name resolved; both
    /// through the guard.
    async fn addresses(&self, url: &Url, port: u16) -> Result<Vec<SocketAddr>, NotConnected> {
        let host = url.host_str().ok_or_else(|| failed("the URL has no host", ""))?;
        let resolved = match ssrf::literal_ip(url) {
            Some(ip) => ssrf::guard(host, vec![SocketAddr::new(ip, port)], self.allow_private),
            None => ssrf::resolve(host, port, self.allow_private).await,
        };
        resolved.map_err(|err| match err {
            Unresolved::Refused(refused) => NotConnected::Refused(refused),
            Unresolved::Failed(err) => failed("cannot resolve the handler's host", &err),
        })
    }
}

/// The first address that accepts a TCP connection, in the order the resolver gave them.
async fn connect_any(addresses: &[SocketAddr]) -> Result<TcpStream, NotConnected> {
    let mut last = None;
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(err) => last = Some(err),
        }
    }
    Err(match last {
        Some(err) => failed("connection failed", &err),
        None => failed("connection failed", "the handler's host has no address"),
    })
}

async fn handshake<S>(io: S) -> Result<Sender, NotConnected>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) =
        http1::handshake(TokioIo::new(io)).await.map_err(|err| failed("HTTP handshake failed", err))?;
    tokio::spawn(async move {
        // A connection's end (the handler closed it, or it failed) shows on its sender.
        connection.await.ok();
    });
    Ok(sender)
}

fn failed(what: &str, why: impl std::fmt::Display) -> NotConnected {
    let why = why.to_string();
    NotConnected::Failed(if why.is_empty() { what.to_owned() } else { format!("{what}: {why}") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use hyper::Request;
    use hyper::server::conn::http1 as server_http1;
    use hyper::service::service_fn;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    use tokio::net::TcpListener;
    use tokio_rustls::TlsAcceptor;

    /// An https handler for `localhost` with a certificate of its own (which no public root
    /// vouches for), answering each request with the TLS server name and protocol it agreed.
    async fn https_handler() -> (Url, CertificateDer<'static>) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap().self_signed(&key).unwrap();
        let der = cert.der().clone();
        let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![der.clone()], private)
            .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = Url::parse(&format!("https://localhost:{}/hook", listener.local_addr().unwrap().port())).unwrap();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let (_, session) = tls.get_ref();
                    let agreed = format!(
                        "{} {}",
                        session.server_name().unwrap_or("-"),
                        String::from_utf8_lossy(session.alpn_protocol().unwrap_or(b"-"))
                    );
                    let service = service_fn(move |_| {
                        let agreed = agreed.clone();
                        async move {
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from(agreed))))
                        }
                    });
                    server_http1::Builder::new().serve_connection(TokioIo::new(tls), service).await.ok();
                });
            }
        });
        (url, der)
    }

    #[tokio::test]
    async fn https_names_the_host_agrees_on_http_1_1_and_trusts_only_its_roots() {
        let (url, cert) = https_handler().await;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let mut sender = Connector::trusting(true, roots).open(&url).await.unwrap();
        let request = Request::post(url.as_str()).body(Full::new(Bytes::from_static(b"{}"))).unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let agreed = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(agreed, "localhost http/1.1", "the server name sent, and HTTP/1.1 though the server offers h2");

        // The public roots do not vouch for it: no connection, and the failure says why.
        match Connector::new(true).open(&url).await {
            Err(NotConnected::Failed(why)) => assert!(why.starts_with("TLS handshake failed"), "{why}"),
            other => panic!("a certificate no public root vouches for was accepted: {:?}", other.map(|_| ())),
        }
    }
}
