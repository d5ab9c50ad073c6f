//! Minisign signatures (Ed25519), verified with `ring`: the public key line
//! (`base64("Ed" ‖ key id ‖ key)`), the `.minisig` file (an untrusted comment, the
//! signature line, the trusted comment, the global signature over the signature and the
//! trusted comment). The legacy algorithm `Ed` signs the file itself (`minisign -S -l`);
//! the prehashed `ED` (minisign's default, which signs the file's BLAKE2b-512) is refused
//! with a message that says how to sign instead: odek carries no BLAKE2b.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::signature::{ED25519, UnparsedPublicKey};

/// Why a key or a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MinisignError {
    /// The public key is not a minisign Ed25519 key.
    #[error("not a minisign public key ({0})")]
    MalformedKey(&'static str),
    /// The `.minisig` text cannot be read.
    #[error("not a minisign signature file ({0})")]
    MalformedSignature(&'static str),
    /// Signed with minisign's prehashed algorithm.
    #[error(
        "the signature is minisign's prehashed kind (\"ED\", BLAKE2b-512), which odek does not verify: sign the release with `minisign -S -l` (the legacy \"Ed\" kind)"
    )]
    Prehashed,
    /// Made by another key.
    #[error("signed by key {signed_by}, not by the release key {expected}")]
    OtherKey {
        /// The key id in the signature, as minisign prints it.
        signed_by: String,
        /// The key id of the public key in use.
        expected: String,
    },
    /// The signature of the file does not verify.
    #[error("the signature does not match the file (changed or forged)")]
    BadSignature,
    /// The global signature (over the trusted comment) does not verify.
    #[error("the trusted comment's signature does not match (changed or forged)")]
    BadTrustedComment,
}

impl crate::error::Classified for MinisignError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            MinisignError::MalformedKey(_) | MinisignError::Prehashed => {
                crate::error::ErrorKind::Config
            }
            MinisignError::MalformedSignature(_)
            | MinisignError::OtherKey { .. }
            | MinisignError::BadSignature
            | MinisignError::BadTrustedComment => crate::error::ErrorKind::Remote,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            MinisignError::OtherKey { .. }
            | MinisignError::BadSignature
            | MinisignError::BadTrustedComment => Some(
                "do not install it: the download is not the release that was signed (docs/UPGRADE.md)",
            ),
            _ => None,
        }
    }
}

/// A minisign Ed25519 public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    key_id: [u8; 8],
    key: [u8; 32],
}

impl PublicKey {
    /// Parses the base64 key line, or a whole `.pub` file (its comment line is skipped).
    pub fn parse(text: &str) -> Result<PublicKey, MinisignError> {
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
            .ok_or(MinisignError::MalformedKey("empty"))?;
        let bytes = STANDARD
            .decode(line)
            .map_err(|_| MinisignError::MalformedKey("not base64"))?;
        if bytes.len() != 42 {
            return Err(MinisignError::MalformedKey("not 42 bytes"));
        }
        if &bytes[..2] != b"Ed" {
            return Err(MinisignError::MalformedKey("not an Ed25519 key"));
        }
        let mut key_id = [0u8; 8];
        key_id.copy_from_slice(&bytes[2..10]);
        let mut key = [0u8; 32];
        key.copy_from_slice(&bytes[10..]);
        Ok(PublicKey { key_id, key })
    }

    /// The key id as minisign prints it (the stored bytes reversed, upper-case hex).
    pub fn key_id_hex(&self) -> String {
        hex_id(&self.key_id)
    }

    /// The base64 key line (what a `.pub` file's second line holds).
    pub fn to_base64(&self) -> String {
        let mut bytes = b"Ed".to_vec();
        bytes.extend_from_slice(&self.key_id);
        bytes.extend_from_slice(&self.key);
        STANDARD.encode(bytes)
    }

    /// Checks `signature_file` (a `.minisig` text) over `message`: the key id, the signature
    /// and the global signature over the trusted comment. Returns the trusted comment.
    pub fn verify(&self, message: &[u8], signature_file: &str) -> Result<String, MinisignError> {
        let signature = Signature::parse(signature_file)?;
        if signature.key_id != self.key_id {
            return Err(MinisignError::OtherKey {
                signed_by: hex_id(&signature.key_id),
                expected: self.key_id_hex(),
            });
        }
        let key = UnparsedPublicKey::new(&ED25519, &self.key);
        key.verify(message, &signature.signature)
            .map_err(|_| MinisignError::BadSignature)?;
        let mut global = signature.signature.to_vec();
        global.extend_from_slice(signature.trusted_comment.as_bytes());
        key.verify(&global, &signature.global)
            .map_err(|_| MinisignError::BadTrustedComment)?;
        Ok(signature.trusted_comment)
    }
}

/// A parsed `.minisig` file of the legacy kind.
struct Signature {
    key_id: [u8; 8],
    signature: [u8; 64],
    trusted_comment: String,
    global: [u8; 64],
}

impl Signature {
    fn parse(text: &str) -> Result<Signature, MinisignError> {
        let malformed = MinisignError::MalformedSignature;
        let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
        let comment = lines.next().ok_or(malformed("empty"))?;
        if !comment.starts_with("untrusted comment:") {
            return Err(malformed("no untrusted comment line"));
        }
        let line = lines.next().ok_or(malformed("no signature line"))?;
        let bytes = STANDARD
            .decode(line.trim())
            .map_err(|_| malformed("the signature line is not base64"))?;
        if bytes.len() != 74 {
            return Err(malformed("the signature line is not 74 bytes"));
        }
        match &bytes[..2] {
            b"Ed" => {}
            b"ED" => return Err(MinisignError::Prehashed),
            _ => return Err(malformed("an unknown signature algorithm")),
        }
        let trusted_comment = lines
            .next()
            .and_then(|l| l.strip_prefix("trusted comment: "))
            .ok_or(malformed("no trusted comment line"))?
            .to_string();
        let global = STANDARD
            .decode(lines.next().ok_or(malformed("no global signature"))?.trim())
            .map_err(|_| malformed("the global signature is not base64"))?;
        let mut signature = Signature {
            key_id: [0; 8],
            signature: [0; 64],
            trusted_comment,
            global: [0; 64],
        };
        signature.key_id.copy_from_slice(&bytes[2..10]);
        signature.signature.copy_from_slice(&bytes[10..]);
        if global.len() != 64 {
            return Err(malformed("the global signature is not 64 bytes"));
        }
        signature.global.copy_from_slice(&global);
        Ok(signature)
    }
}

fn hex_id(id: &[u8; 8]) -> String {
    id.iter().rev().map(|b| format!("{b:02X}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{Ed25519KeyPair, KeyPair};

    /// A key pair and the minisign text of what it signs (the format `minisign -S -l`
    /// writes; the integration tests check it against the real `minisign`).
    struct Signer {
        pair: Ed25519KeyPair,
        key_id: [u8; 8],
    }

    impl Signer {
        fn new(key_id: [u8; 8]) -> Signer {
            let rng = ring::rand::SystemRandom::new();
            let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).expect("key");
            let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("parse");
            Signer { pair, key_id }
        }

        fn public(&self) -> PublicKey {
            let mut key = [0u8; 32];
            key.copy_from_slice(self.pair.public_key().as_ref());
            PublicKey {
                key_id: self.key_id,
                key,
            }
        }

        fn sign_as(&self, algorithm: &[u8; 2], message: &[u8], comment: &str) -> String {
            let sig = self.pair.sign(message);
            let mut line = algorithm.to_vec();
            line.extend_from_slice(&self.key_id);
            line.extend_from_slice(sig.as_ref());
            let mut global = sig.as_ref().to_vec();
            global.extend_from_slice(comment.as_bytes());
            format!(
                "untrusted comment: test\n{}\ntrusted comment: {comment}\n{}\n",
                STANDARD.encode(line),
                STANDARD.encode(self.pair.sign(&global).as_ref())
            )
        }

        fn sign(&self, message: &[u8], comment: &str) -> String {
            self.sign_as(b"Ed", message, comment)
        }
    }

    #[test]
    fn the_built_in_key_parses_with_its_published_id() {
        let key = PublicKey::parse(crate::release::BUILT_IN_PUBLIC_KEY).expect("key");
        assert_eq!(key.key_id_hex(), "EE966432657A022C");
        assert_eq!(key.to_base64(), crate::release::BUILT_IN_PUBLIC_KEY);
        let file = format!(
            "untrusted comment: minisign public key EE966432657A022C\n{}\n",
            crate::release::BUILT_IN_PUBLIC_KEY
        );
        assert_eq!(PublicKey::parse(&file), Ok(key));
    }

    #[test]
    fn a_good_signature_verifies_and_returns_its_trusted_comment() {
        let signer = Signer::new(*b"12345678");
        let text = signer.sign(b"sums\n", "odek 1.2.3");
        assert_eq!(
            signer.public().verify(b"sums\n", &text).as_deref(),
            Ok("odek 1.2.3")
        );
        // CRLF line ends (a file edited on Windows) read the same.
        let crlf = text.replace('\n', "\r\n");
        assert!(signer.public().verify(b"sums\n", &crlf).is_ok());
    }

    #[test]
    fn changed_files_comments_keys_and_prehashed_signatures_are_refused() {
        let signer = Signer::new(*b"12345678");
        let key = signer.public();
        let text = signer.sign(b"sums\n", "odek 1.2.3");
        assert_eq!(
            key.verify(b"sums!\n", &text),
            Err(MinisignError::BadSignature)
        );
        let comment = text.replace("odek 1.2.3", "odek 9.9.9");
        assert_eq!(
            key.verify(b"sums\n", &comment),
            Err(MinisignError::BadTrustedComment)
        );
        // Same id, another key: the signature does not verify.
        let impostor = Signer::new(*b"12345678").sign(b"sums\n", "odek 1.2.3");
        assert_eq!(
            key.verify(b"sums\n", &impostor),
            Err(MinisignError::BadSignature)
        );
        let other = Signer::new(*b"87654321").sign(b"sums\n", "odek 1.2.3");
        assert!(matches!(
            key.verify(b"sums\n", &other),
            Err(MinisignError::OtherKey { .. })
        ));
        let prehashed = signer.sign_as(b"ED", b"sums\n", "c");
        let refused = key.verify(b"sums\n", &prehashed);
        assert_eq!(refused, Err(MinisignError::Prehashed));
        assert!(
            refused
                .expect_err("refused")
                .to_string()
                .contains("minisign -S -l")
        );
        for broken in ["", "untrusted comment: x\n", "hello\nworld\n"] {
            assert!(matches!(
                key.verify(b"sums\n", broken),
                Err(MinisignError::MalformedSignature(_))
            ));
        }
        let no_global: String = text.lines().take(3).collect::<Vec<_>>().join("\n");
        assert!(matches!(
            key.verify(b"sums\n", &no_global),
            Err(MinisignError::MalformedSignature(_))
        ));
    }

    #[test]
    fn keys_that_are_not_minisign_ed25519_keys_are_refused() {
        for bad in ["", "not base64!", "RWQ=", &STANDARD.encode([0u8; 42])] {
            assert!(PublicKey::parse(bad).is_err(), "{bad:?}");
        }
    }
}
