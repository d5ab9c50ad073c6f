//! The one way odek builds an HTTP client (the model endpoint, the Telegram Bot API, MCP
//! servers over streamable HTTP): rustls with the `ring` provider, trusting one set of
//! roots — the system's trust store, through rustls' platform verifier (`/etc/ssl/certs`,
//! or `SSL_CERT_FILE` / `SSL_CERT_DIR`), as the Go original does — so a private-CA vLLM or
//! Ollama gateway works once its CA is installed there. A slim container needs its
//! `ca-certificates` package for public endpoints, like any program that uses the system
//! store.

use std::sync::Once;

/// The `User-Agent` odek sends.
pub const USER_AGENT: &str = concat!("odek/", env!("CARGO_PKG_VERSION"));

/// A client builder with odek's TLS set-up and user agent. Every client goes through here:
/// reqwest is built without a default crypto provider, and this installs `ring` as the
/// process default first (once; a provider installed before is kept).
pub fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder().user_agent(USER_AGENT)
}

/// Installs `ring` as rustls' process-wide crypto provider unless one is set already.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Err only means another thread installed one in between: that one is used.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_client_and_installs_the_provider_once() {
        assert!(client_builder().build().is_ok());
        assert!(client_builder().build().is_ok());
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
