//! Release folders as `make dist` lays them out (docs/UPGRADE.md, issue 61 item 4), signed
//! with a test key, and a loopback HTTP server that serves them the way GitHub's release URLs
//! do — for `odek upgrade` and `install.sh`.
//!
//! The layout under a root (what `ODEK_RELEASE_URL` points at):
//!
//! ```text
//! <root>/download/v<X.Y.Z>/odek-<X.Y.Z>-<target>.tar.gz   one per target
//! <root>/download/v<X.Y.Z>/SHA256SUMS                     `sha256sum` format
//! <root>/download/v<X.Y.Z>/SHA256SUMS.minisig             minisign, legacy "Ed"
//! <root>/download/v<X.Y.Z>/latest.json                    {"version", "published", "notes"}
//! <root>/latest/download/…                                the same files of the latest one
//! ```
//!
//! API: [`TestKey`] (`generate`, `public_base64`, `key_id_hex`, `sign`),
//! [`build_release`] with [`ArchiveContent`], [`publish_latest`], [`archive_name`],
//! [`archive_path`], [`release_dir`], [`host_target`], and [`ReleaseServer`] (`start`,
//! `base`, `cut_short`, `requests`, `count`).

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::signature::{Ed25519KeyPair, KeyPair};
use sha2::{Digest, Sha256};

/// An Ed25519 key in minisign's terms: a key pair and an 8-byte key id.
pub struct TestKey {
    pair: Ed25519KeyPair,
    /// The key id as minisign stores it (little-endian; shown reversed, in hex).
    key_id: [u8; 8],
}

impl TestKey {
    /// A fresh key with a random id.
    pub fn generate() -> TestKey {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).expect("an Ed25519 key");
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("the key parses");
        let mut key_id = [0u8; 8];
        ring::rand::SecureRandom::fill(&rng, &mut key_id).expect("random id");
        TestKey { pair, key_id }
    }

    /// The public key line of a minisign `.pub` file (what `ODEK_RELEASE_PUBKEY` takes):
    /// base64 of `"Ed"` ‖ key id ‖ the 32-byte public key.
    pub fn public_base64(&self) -> String {
        let mut bytes = b"Ed".to_vec();
        bytes.extend_from_slice(&self.key_id);
        bytes.extend_from_slice(self.pair.public_key().as_ref());
        STANDARD.encode(bytes)
    }

    /// The key id as minisign prints it (`EE966432657A022C`): the stored bytes reversed.
    pub fn key_id_hex(&self) -> String {
        self.key_id
            .iter()
            .rev()
            .map(|b| format!("{b:02X}"))
            .collect()
    }

    /// The whole `.minisig` text for `message` in minisign's legacy format (`"Ed"`: the
    /// message itself signed, as `minisign -S -l` does), with its global signature over the
    /// signature and the trusted comment.
    pub fn sign(&self, message: &[u8], trusted_comment: &str) -> String {
        let signature = self.pair.sign(message);
        let mut line = b"Ed".to_vec();
        line.extend_from_slice(&self.key_id);
        line.extend_from_slice(signature.as_ref());
        let mut global = signature.as_ref().to_vec();
        global.extend_from_slice(trusted_comment.as_bytes());
        let global = self.pair.sign(&global);
        format!(
            "untrusted comment: signature from odek's test key\n{}\ntrusted comment: {}\n{}\n",
            STANDARD.encode(line),
            trusted_comment,
            STANDARD.encode(global.as_ref())
        )
    }
}

/// What a test archive holds as `odek`.
#[derive(Clone, Debug)]
pub enum ArchiveContent {
    /// These bytes as `odek` (mode 0755), beside `LICENSE` and `README.md`.
    Binary(Vec<u8>),
    /// No `odek` at all: `LICENSE` and `README.md` only.
    NoBinary,
}

/// The archive's file name: `odek-<version>-<target>.tar.gz`.
pub fn archive_name(version: &str, target: &str) -> String {
    format!("odek-{version}-{target}.tar.gz")
}

/// `<root>/download/v<version>`.
pub fn release_dir(root: &Path, version: &str) -> PathBuf {
    root.join("download").join(format!("v{version}"))
}

/// Where [`build_release`] wrote the archive of `target`.
pub fn archive_path(root: &Path, version: &str, target: &str) -> PathBuf {
    release_dir(root, version).join(archive_name(version, target))
}

/// The target whose archive `odek upgrade` (and `install.sh`) fetch on this machine:
/// `<arch>-unknown-linux-musl` on Linux, `<arch>-apple-darwin` on macOS.
pub fn host_target() -> String {
    let arch = std::env::consts::ARCH;
    match std::env::consts::OS {
        "macos" => format!("{arch}-apple-darwin"),
        _ => format!("{arch}-unknown-linux-musl"),
    }
}

/// Writes release `version` under `<root>/download/v<version>/`: one archive per
/// `(target, content)`, `SHA256SUMS` over them, its signature by `key` and `latest.json`.
pub fn build_release(
    root: &Path,
    version: &str,
    key: &TestKey,
    archives: &[(&str, ArchiveContent)],
) {
    let dir = release_dir(root, version);
    std::fs::create_dir_all(&dir).expect("release folder");
    let mut sums = String::new();
    for (target, content) in archives {
        let name = archive_name(version, target);
        let bytes = tar_gz(version, content);
        std::fs::write(dir.join(&name), &bytes).expect("archive");
        sums.push_str(&format!("{}  {name}\n", sha256_hex(&bytes)));
    }
    std::fs::write(dir.join("SHA256SUMS"), &sums).expect("SHA256SUMS");
    let comment = format!("odek {version} SHA256SUMS");
    std::fs::write(
        dir.join("SHA256SUMS.minisig"),
        key.sign(sums.as_bytes(), &comment),
    )
    .expect("signature");
    let latest = serde_json::json!({
        "version": version,
        "published": "2026-01-02T03:04:05Z",
        "notes": format!("odek {version}: test release"),
    });
    std::fs::write(dir.join("latest.json"), latest.to_string()).expect("latest.json");
}

/// Makes `version` the latest release: copies its files to `<root>/latest/download/`
/// (replacing what another version put there).
pub fn publish_latest(root: &Path, version: &str) {
    let latest = root.join("latest").join("download");
    let _ = std::fs::remove_dir_all(&latest);
    std::fs::create_dir_all(&latest).expect("latest folder");
    for entry in std::fs::read_dir(release_dir(root, version)).expect("release folder") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), latest.join(entry.file_name())).expect("copy");
    }
}

/// The SHA-256 of `bytes` in lower-case hex, as `sha256sum` prints it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A gzipped tar with `odek` (unless left out), `LICENSE` and `README.md` at its top level.
fn tar_gz(version: &str, content: &ArchiveContent) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    if let ArchiveContent::Binary(bytes) = content {
        append(&mut tar, "odek", bytes, 0o755);
    }
    append(&mut tar, "LICENSE", b"MIT License (test archive)\n", 0o644);
    let readme = format!("# odek {version}\n\nA test archive.\n");
    append(&mut tar, "README.md", readme.as_bytes(), 0o644);
    let gz = tar.into_inner().expect("tar");
    let mut bytes = gz.finish().expect("gzip");
    bytes.flush().expect("flush");
    bytes
}

fn append<W: Write>(tar: &mut tar::Builder<W>, name: &str, bytes: &[u8], mode: u32) {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(mode);
    header.set_mtime(1_767_225_600);
    header.set_entry_type(tar::EntryType::Regular);
    tar.append_data(&mut header, name, bytes)
        .expect("tar entry");
}

/// Shared state of a [`ReleaseServer`].
#[derive(Default)]
struct Served {
    /// File names whose answers are cut short.
    cut: HashSet<String>,
    /// Every request's path, in order.
    requests: Vec<String>,
}

/// A static file server for a release root on 127.0.0.1 (port 0), on its own thread and
/// runtime (so a test may block on a child process while it serves). `GET /x/y` answers
/// `<root>/x/y`, or 404.
pub struct ReleaseServer {
    port: u16,
    state: Arc<Mutex<Served>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl ReleaseServer {
    /// Starts serving `root`.
    pub fn start(root: &Path) -> ReleaseServer {
        let state = Arc::new(Mutex::new(Served::default()));
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (root, shared) = (root.to_path_buf(), state.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                port_tx
                    .send(listener.local_addr().expect("addr").port())
                    .expect("port");
                let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
                    let (root, shared) = (root.clone(), shared.clone());
                    async move { answer(&root, &shared, uri.path()) }
                });
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stop_rx.await;
                    })
                    .await;
            });
        });
        let port = port_rx.recv().expect("the server started");
        ReleaseServer {
            port,
            state,
            shutdown: Some(stop_tx),
        }
    }

    /// `http://127.0.0.1:PORT` — the value for `ODEK_RELEASE_URL`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// From now on, every answer for a file of this name (in any folder) declares the
    /// file's full `Content-Length`, sends half its bytes and closes the connection.
    pub fn cut_short(&self, file_name: &str) {
        self.state
            .lock()
            .expect("lock")
            .cut
            .insert(file_name.to_string());
    }

    /// Every request's path so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.state.lock().expect("lock").requests.clone()
    }

    /// How many requests asked for a path ending with `suffix`.
    pub fn count(&self, suffix: &str) -> usize {
        self.requests()
            .iter()
            .filter(|p| p.ends_with(suffix))
            .count()
    }
}

impl Drop for ReleaseServer {
    fn drop(&mut self) {
        if let Some(stop) = self.shutdown.take() {
            let _ = stop.send(());
        }
    }
}

/// The answer for one `GET`: the file, a cut-short file, or 404.
fn answer(root: &Path, state: &Mutex<Served>, path: &str) -> axum::response::Response {
    use axum::body::Body;
    use axum::http::{StatusCode, header};
    let cut = {
        let mut state = state.lock().expect("lock");
        state.requests.push(path.to_string());
        let name = path.rsplit('/').next().unwrap_or_default();
        state.cut.contains(name)
    };
    let relative = path.trim_start_matches('/');
    let file = root.join(relative);
    let readable = !relative.split('/').any(|s| s == "..") && file.is_file();
    let bytes = match readable.then(|| std::fs::read(&file)) {
        Some(Ok(bytes)) => bytes,
        _ => {
            return axum::response::Response::builder()
                .status(StatusCode::NOT_FOUND)
                .body(Body::from("Not Found"))
                .expect("response");
        }
    };
    let full = bytes.len();
    let body = if cut {
        // Half the bytes, then (once hyper has flushed them with the headers: the stream
        // yields to the runtime first) an error: hyper closes the connection short of the
        // length it declared.
        let half = bytes::Bytes::from(bytes[..full / 2].to_vec());
        let pieces = futures_util::stream::unfold(Some(half), |half| async move {
            match half {
                Some(half) => Some((Ok(half), None)),
                None => {
                    tokio::task::yield_now().await;
                    Some((Err(std::io::Error::other("cut short on purpose")), None))
                }
            }
        });
        Body::from_stream(pieces)
    } else {
        Body::from(bytes)
    };
    axum::response::Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_LENGTH, full)
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(body)
        .expect("response")
}
