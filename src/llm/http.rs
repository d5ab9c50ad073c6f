//! The one way odek builds an HTTP client (the model endpoint, the Telegram Bot API, MCP
//! servers over streamable HTTP): rustls with the `ring` provider, trusting the bundled
//! Mozilla roots (so a slim container without `ca-certificates` still reaches public
//! endpoints) and the system trust store (`/etc/ssl/certs`, or `SSL_CERT_FILE` /
//! `SSL_CERT_DIR`), so a private-CA vLLM or Ollama gateway works once its CA is installed
//! there.

use std::sync::Once;

/// The `User-Agent` odek sends.
pub const USER_AGENT: &str = concat!("odek/", env!("CARGO_PKG_VERSION"));

/// A client builder with odek's TLS set-up and user agent. Every client goes through here:
/// reqwest is built without a default crypto provider, and this installs `ring` as the
/// process default first (once; a provider installed before is kept).
pub fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .tls_certs_merge(bundled_roots())
}

/// The Mozilla root certificates compiled into the binary.
fn bundled_roots() -> Vec<reqwest::Certificate> {
    webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .filter_map(|der| reqwest::Certificate::from_der(der).ok())
        .collect()
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

    #[test]
    fn every_bundled_root_parses() {
        assert_eq!(
            bundled_roots().len(),
            webpki_root_certs::TLS_SERVER_ROOT_CERTS.len()
        );
        assert!(bundled_roots().len() > 100);
    }
}
