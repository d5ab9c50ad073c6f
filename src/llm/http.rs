//! The one way odek builds an HTTP client (the model endpoint, the Telegram Bot API, MCP
//! servers over streamable HTTP): rustls with the `ring` provider, trusting one set of
//! roots — the system's trust store, through rustls' platform verifier (`/etc/ssl/certs`,
//! or `SSL_CERT_FILE` / `SSL_CERT_DIR`), as the Go original does — so a private-CA vLLM or
//! Ollama gateway works once its CA is installed there. A slim container needs its
//! `ca-certificates` package for public endpoints, like any program that uses the system
//! store.
//!
//! The store is read on the process's first TLS handshake, not when a client is built: a
//! run against an `http://` endpoint (a local llama.cpp, vLLM or Ollama) never parses the
//! ~150 certificates of `/etc/ssl/certs`, which took a fifth of a one-call run's CPU. Every
//! client of the process then shares the loaded roots.

use std::sync::{Arc, Once, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// The `User-Agent` odek sends.
pub const USER_AGENT: &str = concat!("odek/", env!("CARGO_PKG_VERSION"));

/// A client builder with odek's TLS set-up and user agent. Every client goes through here:
/// reqwest is built without a default crypto provider; this installs `ring` as the process
/// default first (once; a provider installed before is kept) and hands reqwest the
/// process's TLS configuration, whose verifier loads the system roots when first needed.
pub fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    let builder = reqwest::Client::builder().user_agent(USER_AGENT);
    match tls_config() {
        Some(config) => builder.tls_backend_preconfigured(config.clone()),
        None => builder,
    }
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

/// The process's client TLS configuration: reqwest's own for HTTP/1.1 (TLS 1.2 and 1.3,
/// SNI, ALPN `http/1.1`) with the lazily loaded system roots. `None` only if the provider
/// refuses the protocol versions, which `ring` never does; reqwest's default set-up (the
/// same roots, loaded at once) is the fallback then.
fn tls_config() -> Option<&'static rustls::ClientConfig> {
    static CONFIG: OnceLock<Option<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = CryptoProvider::get_default()?.clone();
            let verifier = Arc::new(SystemRoots::new(provider.clone()));
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_protocol_versions(rustls::ALL_VERSIONS)
                .ok()?
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Some(config)
        })
        .as_ref()
}

/// The platform verifier (the system's roots and WebPKI), built on the first certificate it
/// has to check. A failure to load the roots (an empty store) is kept and fails each
/// handshake with its reason.
#[derive(Debug)]
struct SystemRoots {
    provider: Arc<CryptoProvider>,
    verifier: OnceLock<Result<rustls_platform_verifier::Verifier, rustls::Error>>,
}

impl SystemRoots {
    fn new(provider: Arc<CryptoProvider>) -> SystemRoots {
        SystemRoots {
            provider,
            verifier: OnceLock::new(),
        }
    }

    fn loaded(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        self.verifier
            .get_or_init(|| rustls_platform_verifier::Verifier::new(self.provider.clone()))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl ServerCertVerifier for SystemRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.loaded()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    // The signatures need no roots: checked as the platform verifier checks them.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
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
    fn building_a_client_reads_no_roots_until_a_certificate_is_checked() {
        let roots = SystemRoots::new(rustls::crypto::ring::default_provider().into());
        assert!(roots.verifier.get().is_none());
        assert!(!roots.supported_verify_schemes().is_empty());
        assert!(roots.verifier.get().is_none());
    }
}
