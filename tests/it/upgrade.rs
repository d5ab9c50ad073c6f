//! `odek upgrade` against release folders the tests build and sign with their own key
//! (support/release.rs), served over loopback HTTP; and the release helpers themselves,
//! checked against the real `minisign`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::release::{
    ArchiveContent, ReleaseServer, TestKey, archive_name, build_release, host_target,
    publish_latest, release_dir,
};
use crate::support::{
    Sandbox, ScriptedServer, odek_binary, output, show, stderr, stdout, text, tool_results, tools,
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

// ---------------------------------------------------------------------------------------
// `odek upgrade` through the binary: a copy of the built odek in a folder of its own (so
// its `current_exe` is the copy), releases served by `ReleaseServer`, `ODEK_RELEASE_PUBKEY`
// the test key.

/// Newer and older than any odek these tests build.
const NEWER: &str = "99.0.0";
const OLDER: &str = "0.0.1";

/// A copy of odek installed in a temporary folder, with a release root beside it.
struct Installed {
    dir: tempfile::TempDir,
    bin: PathBuf,
    root: PathBuf,
    original: Vec<u8>,
    key: TestKey,
}

impl Installed {
    fn new() -> Installed {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("bin");
        std::fs::create_dir_all(&folder).unwrap();
        let bin = folder.join("odek");
        std::fs::copy(odek_binary(), &bin).unwrap();
        let root = dir.path().join("releases");
        std::fs::create_dir_all(&root).unwrap();
        let original = std::fs::read(&bin).unwrap();
        Installed {
            dir,
            bin,
            root,
            original,
            key: TestKey::generate(),
        }
    }

    /// The "new" odek of `version`: a small script that prints its version (the debug
    /// binary is 400 MB: archiving it for every test would take minutes).
    fn release_bytes(&self, version: &str) -> Vec<u8> {
        format!("#!/bin/sh\necho 'odek {version} (upgrade test build)'\n").into_bytes()
    }

    /// Builds release `version` for this machine, signed with the test key.
    fn release(&self, version: &str) {
        let bytes = self.release_bytes(version);
        build_release(
            &self.root,
            version,
            &self.key,
            &[(&host_target(), ArchiveContent::Binary(bytes))],
        );
    }

    fn old(&self) -> PathBuf {
        self.bin.with_file_name("odek.old")
    }

    /// `odek upgrade ARGS` run from the copy, against `server`, with the test key.
    fn upgrade(&self, server: &ReleaseServer, args: &[&str]) -> Output {
        self.command(server, args).output().unwrap()
    }

    fn command(&self, server: &ReleaseServer, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("upgrade")
            .args(args)
            .env("ODEK_RELEASE_URL", server.base())
            .env("ODEK_RELEASE_PUBKEY", self.key.public_base64())
            .env("ODEK_HOME", self.dir.path().join("home"))
            .env("HOME", self.dir.path())
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// The binary is the one installed at the start, byte for byte, and nothing was kept.
    fn assert_untouched(&self, out: &Output) {
        assert_ne!(out.status.code(), Some(0), "{}", show(out));
        assert!(
            std::fs::read(&self.bin).unwrap() == self.original,
            "the binary changed: {}",
            show(out)
        );
        assert!(!self.old().exists(), "odek.old appeared: {}", show(out));
        let left: Vec<String> = std::fs::read_dir(self.bin.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["odek"], "temporary files left behind");
    }
}

#[test]
fn the_test_versions_bracket_this_odek() {
    let current = env!("CARGO_PKG_VERSION");
    let parse = |v: &str| -> Vec<u64> { v.split('.').map(|n| n.parse().unwrap()).collect() };
    assert!(parse(OLDER) < parse(current) && parse(current) < parse(NEWER));
}

#[test]
fn a_newer_signed_release_is_installed_and_the_old_binary_kept() {
    let odek = Installed::new();
    odek.release(NEWER);
    publish_latest(&odek.root, NEWER);
    let server = ReleaseServer::start(&odek.root);
    let out = odek.upgrade(&server, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        std::fs::read(&odek.bin).unwrap() == odek.release_bytes(NEWER),
        "the release's bytes are installed"
    );
    assert!(std::fs::read(odek.old()).unwrap() == odek.original);
    let said = stdout(&out);
    assert!(said.contains(&format!("to {NEWER}")), "{said}");
    assert!(said.contains("odek.old"), "{said}");
    // The installed file is executable and runs.
    let version = Command::new(&odek.bin).arg("--version").output().unwrap();
    assert_eq!(
        stdout(&version),
        format!("odek {NEWER} (upgrade test build)\n")
    );
    // latest.json once, then the release's files by version, the archive once.
    let archive = archive_name(NEWER, &host_target());
    assert_eq!(server.count("/latest/download/latest.json"), 1);
    assert_eq!(server.count(&format!("/download/v{NEWER}/{archive}")), 1);
    assert_eq!(
        server.count(&format!("/download/v{NEWER}/SHA256SUMS.minisig")),
        1
    );
}

/// `--rollback` swaps the binary and `odek.old` (here an earlier "upgrade" left a script
/// as `odek.old`, so that the real odek runs the rollback; install.rs's unit test runs the
/// replace-then-rollback sequence on files).
#[test]
fn rollback_puts_the_previous_binary_back_and_keeps_the_other() {
    let odek = Installed::new();
    let server = ReleaseServer::start(&odek.root);
    let none = odek.upgrade(&server, &["--rollback"]);
    odek.assert_untouched(&none);
    assert!(
        stderr(&none).contains("no previous binary"),
        "{}",
        show(&none)
    );

    let previous = odek.release_bytes(OLDER);
    std::fs::write(odek.old(), &previous).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(odek.old(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = odek.upgrade(&server, &["--rollback"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(std::fs::read(&odek.bin).unwrap() == previous);
    assert!(std::fs::read(odek.old()).unwrap() == odek.original);
    assert!(stdout(&out).contains("put back"), "{}", show(&out));
    let version = Command::new(&odek.bin).arg("--version").output().unwrap();
    assert_eq!(
        stdout(&version),
        format!("odek {OLDER} (upgrade test build)\n")
    );
    assert!(server.requests().is_empty(), "--rollback fetches nothing");
}

#[test]
fn a_tampered_archive_is_refused_and_the_binary_left_alone() {
    let odek = Installed::new();
    odek.release(NEWER);
    publish_latest(&odek.root, NEWER);
    // Another archive of the same name (a valid tar.gz with an odek), after signing.
    let other = tempfile::tempdir().unwrap();
    build_release(
        other.path(),
        NEWER,
        &odek.key,
        &[(
            &host_target(),
            ArchiveContent::Binary(b"#!/bin/sh\necho evil\n".to_vec()),
        )],
    );
    let name = archive_name(NEWER, &host_target());
    std::fs::copy(
        release_dir(other.path(), NEWER).join(&name),
        release_dir(&odek.root, NEWER).join(&name),
    )
    .unwrap();
    let server = ReleaseServer::start(&odek.root);
    let out = odek.upgrade(&server, &[]);
    odek.assert_untouched(&out);
    assert!(
        stderr(&out).contains("does not match its SHA-256"),
        "{}",
        show(&out)
    );
}

#[test]
fn a_signature_by_another_key_or_none_is_refused() {
    let odek = Installed::new();
    let impostor = TestKey::generate();
    build_release(
        &odek.root,
        NEWER,
        &impostor,
        &[(
            &host_target(),
            ArchiveContent::Binary(odek.release_bytes(NEWER)),
        )],
    );
    publish_latest(&odek.root, NEWER);
    let server = ReleaseServer::start(&odek.root);
    let out = odek.upgrade(&server, &[]);
    odek.assert_untouched(&out);
    let said = stderr(&out);
    assert!(said.contains("signature of SHA256SUMS"), "{said}");
    assert!(said.contains(&impostor.key_id_hex()), "{said}");
    assert_eq!(server.count(".tar.gz"), 0, "no archive fetched");

    // Signed by the right key, then the signature deleted: refused as well.
    odek.release(NEWER);
    std::fs::remove_file(release_dir(&odek.root, NEWER).join("SHA256SUMS.minisig")).unwrap();
    let out = odek.upgrade(&server, &[]);
    odek.assert_untouched(&out);
    assert!(stderr(&out).contains("missing"), "{}", show(&out));

    // A signature whose file changed after signing.
    odek.release(NEWER);
    let sums = release_dir(&odek.root, NEWER).join("SHA256SUMS");
    let mut text = std::fs::read_to_string(&sums).unwrap();
    text.push_str(&format!("{}  odek-{NEWER}-extra.tar.gz\n", "0".repeat(64)));
    std::fs::write(&sums, text).unwrap();
    let out = odek.upgrade(&server, &[]);
    odek.assert_untouched(&out);
    assert!(
        stderr(&out).contains("does not match the file"),
        "{}",
        show(&out)
    );
}

#[test]
fn a_release_without_this_machines_archive_or_its_odek_is_refused() {
    let odek = Installed::new();
    build_release(
        &odek.root,
        NEWER,
        &odek.key,
        &[(
            "sparc64-unknown-linux-musl",
            ArchiveContent::Binary(b"x".to_vec()),
        )],
    );
    publish_latest(&odek.root, NEWER);
    let server = ReleaseServer::start(&odek.root);
    let out = odek.upgrade(&server, &[]);
    odek.assert_untouched(&out);
    assert!(
        stderr(&out).contains("has no archive for this machine"),
        "{}",
        show(&out)
    );

    build_release(
        &odek.root,
        NEWER,
        &odek.key,
        &[(&host_target(), ArchiveContent::NoBinary)],
    );
    let out = odek.upgrade(&server, &[]);
    odek.assert_untouched(&out);
    assert!(stderr(&out).contains("holds no odek"), "{}", show(&out));
}

#[test]
fn an_interrupted_download_is_refused() {
    let odek = Installed::new();
    odek.release(NEWER);
    publish_latest(&odek.root, NEWER);
    let server = ReleaseServer::start(&odek.root);
    server.cut_short(&archive_name(NEWER, &host_target()));
    let out = odek.upgrade(&server, &[]);
    odek.assert_untouched(&out);
    assert!(stderr(&out).contains("cut short"), "{}", show(&out));
}

#[test]
fn an_older_release_needs_to_and_then_installs() {
    let odek = Installed::new();
    odek.release(OLDER);
    publish_latest(&odek.root, OLDER);
    let server = ReleaseServer::start(&odek.root);
    let out = odek.upgrade(&server, &[]);
    odek.assert_untouched(&out);
    let said = stderr(&out);
    assert!(said.contains("older than this odek"), "{said}");
    assert!(said.contains(&format!("--to {OLDER}")), "{said}");
    assert_eq!(server.count(".tar.gz"), 0);

    // A version that was never released: the server's 404, nothing changed.
    let missing = odek.upgrade(&server, &["--to", "5.5.5"]);
    odek.assert_untouched(&missing);
    assert!(stderr(&missing).contains("404"), "{}", show(&missing));

    let out = odek.upgrade(&server, &["--to", OLDER]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(std::fs::read(&odek.bin).unwrap() == odek.release_bytes(OLDER));
    assert!(std::fs::read(odek.old()).unwrap() == odek.original);
}

#[test]
fn check_exits_10_when_a_newer_release_exists_and_0_when_current() {
    let odek = Installed::new();
    odek.release(NEWER);
    odek.release(env!("CARGO_PKG_VERSION"));
    publish_latest(&odek.root, NEWER);
    let server = ReleaseServer::start(&odek.root);
    let out = odek.upgrade(&server, &["--check"]);
    assert_eq!(out.status.code(), Some(10), "{}", show(&out));
    assert!(stdout(&out).contains(&format!("odek {NEWER} is available")));
    assert_eq!(server.count(".tar.gz"), 0, "--check downloads nothing");

    publish_latest(&odek.root, env!("CARGO_PKG_VERSION"));
    let out = odek.upgrade(&server, &["--check"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("up to date"), "{}", show(&out));
    // And `odek upgrade` has nothing to do.
    let out = odek.upgrade(&server, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("nothing to do"), "{}", show(&out));
    assert!(std::fs::read(&odek.bin).unwrap() == odek.original);
    assert!(!odek.old().exists());
    assert_eq!(server.count(".tar.gz"), 0);

    // No release at all: the usual error exit.
    let empty = tempfile::tempdir().unwrap();
    let nothing = ReleaseServer::start(empty.path());
    let out = odek.upgrade(&nothing, &["--check"]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
}

#[test]
fn key_prints_the_key_in_use() {
    let odek = Installed::new();
    let server = ReleaseServer::start(&odek.root);
    let out = odek.upgrade(&server, &["--key"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let expected = format!(
        "untrusted comment: minisign public key {}\n{}\n",
        odek.key.key_id_hex(),
        odek.key.public_base64()
    );
    assert_eq!(stdout(&out), expected);
    assert!(stderr(&out).contains("ODEK_RELEASE_PUBKEY"));

    let mut built_in = odek.command(&server, &["--key"]);
    built_in.env_remove("ODEK_RELEASE_PUBKEY");
    let out = built_in.output().unwrap();
    assert_eq!(
        stdout(&out),
        "untrusted comment: minisign public key EE966432657A022C\n\
         RWQsAnplMmSW7qF+b4q+V4UOyCIuzmrDNHQtoG1bd+aDZXGCl1JfBS7u\n"
    );
    assert!(stderr(&out).contains("built-in"));
    assert!(server.requests().is_empty(), "--key fetches nothing");
}

#[test]
fn a_release_signed_by_the_real_minisign_installs_and_a_prehashed_one_is_refused() {
    if !minisign_available() {
        eprintln!("minisign is not installed: skipped");
        return;
    }
    let odek = Installed::new();
    odek.release(NEWER);
    publish_latest(&odek.root, NEWER);
    let keys = odek.dir.path().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let (public, secret) = (keys.join("odek.pub"), keys.join("odek.key"));
    let made = Command::new("minisign")
        .args(["-G", "-W", "-p"])
        .arg(&public)
        .arg("-s")
        .arg(&secret)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", show(&made));
    let release = release_dir(&odek.root, NEWER);
    let sign = |legacy: bool| {
        let mut cmd = Command::new("minisign");
        cmd.arg("-S");
        if legacy {
            cmd.arg("-l");
        }
        let out = cmd
            .arg("-s")
            .arg(&secret)
            .arg("-m")
            .arg(release.join("SHA256SUMS"))
            .arg("-x")
            .arg(release.join("SHA256SUMS.minisig"))
            .args(["-t", &format!("odek {NEWER}")])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", show(&out));
    };
    let pubkey = std::fs::read_to_string(&public).unwrap();
    let server = ReleaseServer::start(&odek.root);

    sign(false);
    let mut cmd = odek.command(&server, &[]);
    cmd.env("ODEK_RELEASE_PUBKEY", pubkey.lines().nth(1).unwrap());
    let out = cmd.output().unwrap();
    odek.assert_untouched(&out);
    assert!(stderr(&out).contains("minisign -S -l"), "{}", show(&out));

    sign(true);
    // The whole .pub file works too.
    let mut cmd = odek.command(&server, &[]);
    cmd.env("ODEK_RELEASE_PUBKEY", &pubkey);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(std::fs::read(&odek.bin).unwrap() == odek.release_bytes(NEWER));
}

#[test]
fn a_binary_in_a_folder_odek_cannot_write_is_not_replaced_and_says_how_to_upgrade() {
    let odek = Installed::new();
    odek.release(NEWER);
    publish_latest(&odek.root, NEWER);
    let server = ReleaseServer::start(&odek.root);
    let folder = odek.bin.parent().unwrap().to_path_buf();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();
    let blocked = std::fs::write(folder.join("probe"), b"x").is_err();
    let out = if blocked {
        odek.upgrade(&server, &[])
    } else {
        // Root writes through permissions: a read-only bind mount stops it.
        let _ = std::fs::remove_file(folder.join("probe"));
        let mut cmd = Command::new("unshare");
        let script =
            "mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro \"$1\" && shift && exec \"$@\"";
        cmd.args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
            .arg(&folder);
        let inner = odek.command(&server, &[]);
        cmd.arg(inner.get_program()).args(inner.get_args());
        cmd.envs(inner.get_envs().filter_map(|(k, v)| Some((k, v?))));
        let out = cmd.output().unwrap();
        if stderr(&out).contains("unshare:") || stderr(&out).contains("mount:") {
            eprintln!("neither permissions nor a read-only mount bind here: skipped");
            std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
            return;
        }
        out
    };
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    odek.assert_untouched(&out);
    let said = stderr(&out);
    assert!(said.contains("cannot replace"), "{said}");
    assert!(said.contains("ODEK_INSTALL_DIR"), "{said}");
    assert_eq!(server.count(".tar.gz"), 0, "refused before downloading");
}

/// The model never upgrades odek: its shell call of `odek upgrade`, or one that points
/// `ODEK_RELEASE_URL` elsewhere, is persistence — asked for, and refused with nobody to ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_shell_call_to_upgrade_odek_is_persistence_and_denied() {
    let sb = Sandbox::new();
    let calls = [
        ("shell", serde_json::json!({"command": "odek upgrade"})),
        (
            "shell",
            serde_json::json!({"command": "export ODEK_RELEASE_URL=http://127.0.0.1:1/ && echo set"}),
        ),
    ];
    let server = ScriptedServer::start(vec![tools(&calls), text("done")]).await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "upgrade yourself"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    for result in &results {
        assert!(
            result.contains("operation denied") && result.contains("persistence"),
            "{result}"
        );
    }
}
