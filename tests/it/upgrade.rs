//! `odek upgrade` against release folders the tests build and sign with their own key
//! (support/release.rs), served over loopback HTTP; and the release helpers themselves,
//! checked against the real `minisign`.

use std::path::Path;
use std::process::Command;

use crate::support::release::{
    ArchiveContent, ReleaseServer, TestKey, archive_name, build_release, host_target,
    publish_latest, release_dir,
};

/// True when the `minisign` CLI is installed (the checks against it are skipped otherwise).
fn minisign_available() -> bool {
    Command::new("minisign")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn test_key_signatures_verify_with_the_real_minisign() {
    if !minisign_available() {
        eprintln!("minisign is not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = TestKey::generate();
    build_release(
        dir.path(),
        "1.2.3",
        &key,
        &[(
            &host_target(),
            ArchiveContent::Binary(b"#!/bin/sh\n".to_vec()),
        )],
    );
    let release = release_dir(dir.path(), "1.2.3");
    let verify = |pubkey: &str| {
        Command::new("minisign")
            .arg("-V")
            .arg("-P")
            .arg(pubkey)
            .arg("-m")
            .arg(release.join("SHA256SUMS"))
            .arg("-x")
            .arg(release.join("SHA256SUMS.minisig"))
            .output()
            .unwrap()
    };
    let out = verify(&key.public_base64());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Signature and comment signature verified"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Trusted comment: odek 1.2.3 SHA256SUMS"),
        "{stdout}"
    );

    // Another key's public key is refused, and so is a changed file.
    assert!(
        !verify(&TestKey::generate().public_base64())
            .status
            .success()
    );
    std::fs::write(release.join("SHA256SUMS"), "changed\n").unwrap();
    assert!(!verify(&key.public_base64()).status.success());
}

#[test]
fn the_public_key_line_carries_the_key_id_minisign_shows() {
    let key = TestKey::generate();
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(key.public_base64())
        .unwrap();
    assert_eq!(bytes.len(), 42);
    assert_eq!(&bytes[..2], b"Ed");
    let shown: String = bytes[2..10]
        .iter()
        .rev()
        .map(|b| format!("{b:02X}"))
        .collect();
    assert_eq!(shown, key.key_id_hex());
}

/// The names in a gzipped tar, in order.
fn archive_entries(path: &Path) -> Vec<String> {
    let file = std::fs::File::open(path).unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    tar.entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().to_string())
        .collect()
}

#[test]
fn a_release_folder_follows_the_contract_and_latest_copies_it() {
    let dir = tempfile::tempdir().unwrap();
    let key = TestKey::generate();
    build_release(
        dir.path(),
        "0.9.0",
        &key,
        &[
            (
                "x86_64-unknown-linux-musl",
                ArchiveContent::Binary(b"one".to_vec()),
            ),
            ("aarch64-apple-darwin", ArchiveContent::NoBinary),
        ],
    );
    let release = release_dir(dir.path(), "0.9.0");
    let linux = release.join(archive_name("0.9.0", "x86_64-unknown-linux-musl"));
    assert_eq!(archive_entries(&linux), ["odek", "LICENSE", "README.md"]);
    let mac = release.join(archive_name("0.9.0", "aarch64-apple-darwin"));
    assert_eq!(archive_entries(&mac), ["LICENSE", "README.md"]);

    // `sha256sum -c` accepts SHA256SUMS as written.
    let check = Command::new("sha256sum")
        .args(["-c", "SHA256SUMS"])
        .current_dir(&release)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    assert_eq!(
        String::from_utf8_lossy(&check.stdout).lines().count(),
        2,
        "one line per archive"
    );
    let latest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(release.join("latest.json")).unwrap())
            .unwrap();
    assert_eq!(latest["version"], "0.9.0");
    assert!(latest["published"].as_str().unwrap().ends_with('Z'));

    publish_latest(dir.path(), "0.9.0");
    let copied = dir.path().join("latest/download");
    for name in ["SHA256SUMS", "SHA256SUMS.minisig", "latest.json"] {
        assert_eq!(
            std::fs::read(copied.join(name)).unwrap(),
            std::fs::read(release.join(name)).unwrap(),
            "{name}"
        );
    }
}

#[tokio::test]
async fn the_release_server_serves_files_cuts_one_short_and_counts_requests() {
    let dir = tempfile::tempdir().unwrap();
    let key = TestKey::generate();
    let body = vec![7u8; 100_000];
    build_release(
        dir.path(),
        "1.0.0",
        &key,
        &[(&host_target(), ArchiveContent::Binary(body))],
    );
    publish_latest(dir.path(), "1.0.0");
    let server = ReleaseServer::start(dir.path());
    let client = odek::llm::http::client_builder().build().unwrap();
    let url = format!("{}/latest/download/SHA256SUMS", server.base());
    let got = client.get(&url).send().await.unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(
        got.bytes().await.unwrap().as_ref(),
        std::fs::read(dir.path().join("latest/download/SHA256SUMS")).unwrap()
    );
    let missing = format!("{}/download/v9.9.9/latest.json", server.base());
    assert_eq!(client.get(&missing).send().await.unwrap().status(), 404);

    let name = archive_name("1.0.0", &host_target());
    server.cut_short(&name);
    let url = format!("{}/download/v1.0.0/{name}", server.base());
    let cut = client.get(&url).send().await.unwrap();
    let declared = cut.content_length().unwrap();
    assert_eq!(
        declared,
        std::fs::metadata(release_dir(dir.path(), "1.0.0").join(&name))
            .unwrap()
            .len()
    );
    assert!(
        cut.bytes().await.is_err(),
        "the body ends short of its length"
    );
    assert_eq!(server.count(&name), 1);
    assert_eq!(server.count("SHA256SUMS"), 1);
    assert_eq!(server.requests().len(), 3);
}
