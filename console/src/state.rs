//! `ConsoleState`: what every console handler shares: the control plane, the message engine, the
//! key that signs CSRF tokens and flash messages, the receipt codec (for deliveries received in the
//! browser), and whether the console is served over TLS.

use crate::signer::Signer;
use aqs_control_plane::ControlPlane;
use aqs_core::config::Config;
use aqs_core::receipt::ReceiptCodec;
use aqs_engine::Engine;
use std::sync::Arc;

/// Cheap to clone: everything lives behind one `Arc`.
#[derive(Clone)]
pub(crate) struct ConsoleState {
    inner: Arc<Inner>,
}

struct Inner {
    control: ControlPlane,
    engine: Engine,
    signer: Signer,
    receipts: ReceiptCodec,
    https: bool,
}

impl ConsoleState {
    pub(crate) fn new(config: &Config, control: ControlPlane, engine: Engine) -> Self {
        Self {
            inner: Arc::new(Inner {
                control,
                engine,
                signer: Signer::new(config.session_secret.expose().as_bytes()),
                receipts: ReceiptCodec::new(config.receipt_secret.expose().as_bytes()),
                https: config.public_url.starts_with("https://"),
            }),
        }
    }

    pub(crate) fn control(&self) -> &ControlPlane {
        &self.inner.control
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    pub(crate) fn signer(&self) -> &Signer {
        &self.inner.signer
    }

    /// Receipts, signed as the API signs them.
    pub(crate) fn receipts(&self) -> &ReceiptCodec {
        &self.inner.receipts
    }

    /// True when the public URL is https: cookies are then always `Secure`.
    pub(crate) fn https(&self) -> bool {
        self.inner.https
    }
}
