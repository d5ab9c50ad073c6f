//! `install.sh` run for real by `sh`, with a controlled environment (PATH holding only the
//! tools it needs, HOME and TMPDIR in a temp dir), against release folders served over
//! loopback HTTP (support/release.rs); and `scripts/dist.sh` (`make dist`) packaging a
//! prebuilt binary into the folder layout those rely on (docs/RELEASES.md).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::odek_binary;
use crate::support::release::{
    ArchiveContent, ReleaseServer, TestKey, archive_name, archive_path, build_release, host_target,
    publish_latest, release_dir, sha256_hex,
};

/// The repository's root (install.sh, scripts/dist.sh, the docs).
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The programs install.sh runs; it must work with these alone on PATH.
const TOOLS: &[&str] = &[
    "sh", "uname", "mktemp", "cut", "awk", "sed", "grep", "head", "tar", "gzip", "mkdir", "cp",
    "chmod", "mv", "rm",
];
/// Used when present: one checksum tool is enough; sysctl only matters on macOS.
const OPTIONAL_TOOLS: &[&str] = &["sha256sum", "shasum", "sysctl"];

/// Where `name` is on the test process's PATH.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// True when the `minisign` CLI is installed.
fn minisign_installed() -> bool {
    which("minisign").is_some()
}

/// A folder of links to the tools install.sh needs, with `downloader` (curl or wget) and,
/// when `with_minisign` and it is installed, minisign: the whole PATH the script runs with.
fn tools_dir(parent: &Path, with_minisign: bool, downloader: &str) -> PathBuf {
    let minisign = if with_minisign { "" } else { "-no-minisign" };
    let dir = parent.join(format!("bin-{downloader}{minisign}"));
    if dir.exists() {
        return dir;
    }
    std::fs::create_dir_all(&dir).unwrap();
    for name in TOOLS.iter().chain([&downloader]) {
        let found = which(name).unwrap_or_else(|| panic!("{name} is not installed"));
        std::os::unix::fs::symlink(found, dir.join(name)).unwrap();
    }
    let mut optional: Vec<&str> = OPTIONAL_TOOLS.to_vec();
    if with_minisign {
        optional.push("minisign");
    }
    for name in optional {
        if let Some(found) = which(name) {
            std::os::unix::fs::symlink(found, dir.join(name)).unwrap();
        }
    }
    assert!(
        dir.join("sha256sum").exists() || dir.join("shasum").exists(),
        "neither sha256sum nor shasum is installed"
    );
    dir
}

/// A stand-in for odek that answers `--version` as odek does.
fn fake_odek(version: &str) -> Vec<u8> {
    format!("#!/bin/sh\necho \"odek {version} (test build)\"\n").into_bytes()
}

/// One test's world: a release root served over HTTP, a key, a home and its tools.
struct World {
    dir: tempfile::TempDir,
    root: PathBuf,
    key: TestKey,
    server: ReleaseServer,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("releases");
        std::fs::create_dir_all(&root).unwrap();
        for sub in ["home", "tmp"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let server = ReleaseServer::start(&root);
        World {
            dir,
            root,
            key: TestKey::generate(),
            server,
        }
    }

    /// Release `version` for this machine's target holding `fake_odek(version)`, signed by
    /// the world's key, and made the latest.
    fn release(&self, version: &str) {
        build_release(
            &self.root,
            version,
            &self.key,
            &[(&host_target(), ArchiveContent::Binary(fake_odek(version)))],
        );
        publish_latest(&self.root, version);
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    /// The default install folder, ~/.local/bin.
    fn bin(&self) -> PathBuf {
        self.home().join(".local").join("bin")
    }

    fn installed(&self) -> Option<Vec<u8>> {
        std::fs::read(self.bin().join("odek")).ok()
    }

    /// `sh install.sh` with only the environment a user's shell would hand it here.
    fn command(&self, with_minisign: bool) -> Command {
        self.command_with(with_minisign, "curl")
    }

    /// `sh install.sh` fetching with `downloader` (curl or wget).
    fn command_with(&self, with_minisign: bool, downloader: &str) -> Command {
        let tools = tools_dir(self.dir.path(), with_minisign, downloader);
        let mut cmd = Command::new(which("sh").expect("sh"));
        cmd.arg(repo().join("install.sh"))
            .env_clear()
            .env("PATH", &tools)
            .env("HOME", self.home())
            .env("TMPDIR", self.tmp())
            .env("ODEK_RELEASE_URL", self.server.base())
            .env("ODEK_RELEASE_PUBKEY", self.key.public_base64())
            .current_dir(self.dir.path());
        cmd
    }

    fn install(&self) -> Output {
        self.command(true).output().unwrap()
    }

    /// What is left in the install folder and TMPDIR besides odek: nothing, after any run.
    fn assert_no_leftovers(&self) {
        let tmp: Vec<_> = std::fs::read_dir(self.tmp()).unwrap().collect();
        assert!(tmp.is_empty(), "left in TMPDIR: {tmp:?}");
        if let Ok(entries) = std::fs::read_dir(self.bin()) {
            let names: Vec<String> = entries
                .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .collect();
            assert!(
                names.iter().all(|n| n == "odek"),
                "left in the install folder: {names:?}"
            );
        }
    }
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn assert_success(out: &Output) {
    assert!(out.status.success(), "{}", text(out));
}

fn assert_refused(out: &Output, message: &str) {
    assert!(!out.status.success(), "{}", text(out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(message), "{}", text(out));
    assert!(stderr.contains("nothing installed"), "{}", text(out));
}

#[test]
fn install_sh_installs_a_signed_release_byte_for_byte() {
    if !minisign_installed() {
        eprintln!("minisign is not installed: skipped (the checksum-only test still runs)");
        return;
    }
    let world = World::new();
    world.release("1.0.0");
    let out = world.install();
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("signature of SHA256SUMS verified (minisign"),
        "{}",
        text(&out)
    );
    assert!(!stdout.contains("checksum only"), "{}", text(&out));
    assert!(stdout.contains("installed odek 1.0.0"), "{}", text(&out));
    assert_eq!(world.installed().unwrap(), fake_odek("1.0.0"));
    let mode = std::fs::metadata(world.bin().join("odek"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    // It read latest.json, then the named version's own folder.
    let requests = world.server.requests();
    assert_eq!(requests[0], "/latest/download/latest.json", "{requests:?}");
    let archive = archive_name("1.0.0", &host_target());
    assert!(requests.contains(&format!("/download/v1.0.0/{archive}")));
    world.assert_no_leftovers();
}

#[test]
fn install_sh_without_minisign_says_it_checked_the_checksum_only() {
    let world = World::new();
    world.release("1.0.0");
    let out = world.command(false).output().unwrap();
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("minisign is not installed: checked the SHA-256 checksum only"),
        "{}",
        text(&out)
    );
    assert_eq!(world.server.count("SHA256SUMS.minisig"), 0);
    assert_eq!(world.installed().unwrap(), fake_odek("1.0.0"));
    world.assert_no_leftovers();
}

/// Tampering checks run with and without minisign: the checksum alone must catch it.
#[test]
fn install_sh_refuses_a_tampered_archive_and_keeps_the_installed_odek() {
    for with_minisign in [true, false] {
        let world = World::new();
        world.release("1.0.0");
        assert_success(&world.install());
        world.release("1.1.0");
        // Another archive of the same name (SHA256SUMS and its signature unchanged).
        let archive = archive_path(&world.root, "1.1.0", &host_target());
        let mut bytes = std::fs::read(&archive).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&archive, &bytes).unwrap();
        publish_latest(&world.root, "1.1.0");

        let out = world.command(with_minisign).output().unwrap();
        assert_refused(&out, "checksum mismatch");
        assert_eq!(world.installed().unwrap(), fake_odek("1.0.0"));
        world.assert_no_leftovers();
    }
}

#[test]
fn install_sh_refuses_a_bad_or_missing_signature_before_fetching_the_archive() {
    if !minisign_installed() {
        eprintln!("minisign is not installed: skipped");
        return;
    }
    let world = World::new();
    world.release("1.0.0");
    assert_success(&world.install());
    // 1.1.0 signed by another key than the one install.sh trusts.
    build_release(
        &world.root,
        "1.1.0",
        &TestKey::generate(),
        &[(&host_target(), ArchiveContent::Binary(fake_odek("1.1.0")))],
    );
    publish_latest(&world.root, "1.1.0");
    let out = world.install();
    assert_refused(&out, "does not verify");
    assert_eq!(world.installed().unwrap(), fake_odek("1.0.0"));
    assert_eq!(world.server.count(".tar.gz"), 1, "only 1.0.0's archive");

    // No signature at all, where minisign could check one: refused too.
    std::fs::remove_file(release_dir(&world.root, "1.1.0").join("SHA256SUMS.minisig")).unwrap();
    publish_latest(&world.root, "1.1.0");
    let out = world.install();
    assert_refused(&out, "SHA256SUMS.minisig");
    assert_eq!(world.installed().unwrap(), fake_odek("1.0.0"));
    world.assert_no_leftovers();
}

#[test]
fn install_sh_refuses_a_download_cut_short() {
    let world = World::new();
    world.release("1.0.0");
    assert_success(&world.install());
    world.release("1.1.0");
    world
        .server
        .cut_short(&archive_name("1.1.0", &host_target()));
    let out = world.install();
    assert_refused(&out, "could not fetch");
    assert_eq!(world.installed().unwrap(), fake_odek("1.0.0"));
    world.assert_no_leftovers();
}

/// Where curl is missing, wget fetches: a good release installs, a download cut short is
/// refused.
#[test]
fn install_sh_fetches_with_wget_when_curl_is_missing() {
    if which("wget").is_none() {
        eprintln!("wget is not installed: skipped");
        return;
    }
    let world = World::new();
    world.release("1.0.0");
    let out = world.command_with(true, "wget").output().unwrap();
    assert_success(&out);
    assert_eq!(world.installed().unwrap(), fake_odek("1.0.0"));
    world.release("1.1.0");
    world
        .server
        .cut_short(&archive_name("1.1.0", &host_target()));
    let out = world.command_with(true, "wget").output().unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing installed"),
        "{}",
        text(&out)
    );
    assert_eq!(world.installed().unwrap(), fake_odek("1.0.0"));
    world.assert_no_leftovers();
}

#[test]
fn install_sh_twice_is_already_done_and_forced_installs_again() {
    let world = World::new();
    world.release("1.0.0");
    assert_success(&world.install());
    let out = world.install();
    assert_success(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("odek 1.0.0 is already installed"),
        "{}",
        text(&out)
    );
    assert_eq!(world.server.count(".tar.gz"), 1);
    let out = world.command(true).env("ODEK_FORCE", "1").output().unwrap();
    assert_success(&out);
    assert_eq!(world.server.count(".tar.gz"), 2);
    assert_eq!(world.installed().unwrap(), fake_odek("1.0.0"));
    world.assert_no_leftovers();
}

#[test]
fn install_sh_prints_the_path_line_only_when_the_folder_is_not_on_path() {
    let world = World::new();
    world.release("1.0.0");
    let custom = world.dir.path().join("my bin");
    let line = format!("export PATH=\"{}:$PATH\"", custom.display());
    let out = world
        .command(true)
        .env("ODEK_INSTALL_DIR", &custom)
        .output()
        .unwrap();
    assert_success(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&line),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read(custom.join("odek")).unwrap(),
        fake_odek("1.0.0")
    );

    let tools = tools_dir(world.dir.path(), true, "curl");
    let path = std::env::join_paths([tools, custom.clone()]).unwrap();
    let out = world
        .command(true)
        .env("ODEK_INSTALL_DIR", &custom)
        .env("ODEK_FORCE", "1")
        .env("PATH", path)
        .output()
        .unwrap();
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("export PATH"), "{}", text(&out));
    assert!(!stdout.contains("not on your PATH"), "{}", text(&out));
}

#[test]
fn install_sh_installs_the_version_odek_version_names() {
    let world = World::new();
    world.release("1.0.0");
    world.release("1.1.0-rc.1");
    let out = world
        .command(true)
        .env("ODEK_VERSION", "v1.0.0")
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(world.installed().unwrap(), fake_odek("1.0.0"));
    assert_eq!(world.server.count("latest.json"), 0);

    // Without it, the latest: a pre-release version is a version.
    assert_success(&world.install());
    assert_eq!(world.installed().unwrap(), fake_odek("1.1.0-rc.1"));

    // Neither may be anything but a version: it becomes part of URLs and file names.
    let out = world
        .command(true)
        .env("ODEK_VERSION", "1.0/../../x")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a version"));
    std::fs::write(
        world.root.join("latest/download/latest.json"),
        r#"{"version": "1.2.0; rm -rf ~", "published": "2026-01-01T00:00:00Z", "notes": ""}"#,
    )
    .unwrap();
    let out = world.install();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("names no X.Y.Z version"),
        "{}",
        text(&out)
    );
    assert_eq!(world.installed().unwrap(), fake_odek("1.1.0-rc.1"));
    world.assert_no_leftovers();
}

#[test]
fn install_sh_and_dist_sh_are_shellcheck_clean() {
    if which("shellcheck").is_none() {
        eprintln!("shellcheck is not installed: skipped");
        return;
    }
    let out = Command::new("shellcheck")
        .args(["-s", "sh", "install.sh", "scripts/dist.sh"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert_success(&out);
}

/// The release key, written in install.sh, scripts/dist.sh and the docs and compiled into
/// odek, is one key.
#[test]
fn the_release_public_key_is_the_same_everywhere() {
    let key = "RWQsAnplMmSW7qF+b4q+V4UOyCIuzmrDNHQtoG1bd+aDZXGCl1JfBS7u";
    for file in [
        "install.sh",
        "scripts/dist.sh",
        "docs/INSTALL.md",
        "docs/RELEASES.md",
    ] {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        assert!(text.contains(key), "{file} does not name the release key");
    }
    // The one compiled into odek, as `odek upgrade --key` prints it.
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(odek_binary())
        .args(["upgrade", "--key"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("ODEK_HOME", home.path().join(".odek"))
        .output()
        .unwrap();
    assert_success(&out);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(printed.lines().nth(1), Some(key), "{}", text(&out));
}

/// `scripts/dist.sh` run with `args` and `env` over a clean environment (the test's PATH).
fn dist(out_dir: &Path, env: &[(&str, &Path)], extra: &[(&str, &str)]) -> Output {
    let home = out_dir.parent().unwrap().join("dist-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(which("sh").expect("sh"));
    cmd.arg(repo().join("scripts/dist.sh"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("ODEK_HOME", home.join(".odek"))
        .env("DIST_DIR", out_dir)
        .env("DIST_DOCS_BIN", odek_binary())
        .env("SOURCE_DATE_EPOCH", "1767225600");
    for (k, v) in env {
        cmd.env(k, v);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Each entry of a gzipped tar: name → (mode, uid, gid, mtime, bytes).
type Entries = BTreeMap<String, (u32, u64, u64, u64, Vec<u8>)>;

fn read_archive(path: &Path) -> (Vec<String>, Entries) {
    use std::io::Read;
    let file = std::fs::File::open(path).unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let (mut order, mut entries) = (Vec::new(), BTreeMap::new());
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().to_string();
        let h = entry.header();
        let meta = (
            h.mode().unwrap(),
            h.uid().unwrap(),
            h.gid().unwrap(),
            h.mtime().unwrap(),
        );
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        order.push(name.clone());
        entries.insert(name, (meta.0, meta.1, meta.2, meta.3, bytes));
    }
    (order, entries)
}

/// `make dist`'s packaging (DIST_PREBUILT: no build) lays out the folder the contract names,
/// the same bytes twice, signed with a minisign key the real minisign made — and install.sh
/// installs exactly that folder.
#[test]
fn dist_sh_packages_the_contract_layout_and_install_sh_installs_it() {
    if !minisign_installed() {
        eprintln!("minisign is not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = host_target();
    let version = env!("CARGO_PKG_VERSION");
    let binary = dir.path().join("odek-prebuilt");
    std::fs::write(&binary, fake_odek(version)).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o700)).unwrap();
    // A key pair from the real minisign, without a password.
    let keys = dir.path().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let out = Command::new("minisign")
        .args(["-G", "-W", "-p"])
        .arg(keys.join("pub"))
        .arg("-s")
        .arg(keys.join("sec"))
        .output()
        .unwrap();
    assert_success(&out);
    let pubkey = std::fs::read_to_string(keys.join("pub")).unwrap();
    let pubkey = pubkey.lines().last().unwrap().to_string();

    let out_dir = dir.path().join("dist");
    let signed = |out_dir: &Path| {
        dist(
            out_dir,
            &[
                ("DIST_PREBUILT", &binary),
                ("ODEK_MINISIGN_KEY", &keys.join("sec")),
            ],
            &[
                ("DIST_TARGETS", &target),
                ("ODEK_RELEASE_PUBKEY", &pubkey),
                ("DIST_NOTES", "First \"release\"\nof odek."),
                ("DIST_PUBLISHED", "2026-12-05T08:00:00Z"),
            ],
        )
    };
    let out = signed(&out_dir);
    assert_success(&out);

    // The folder: one archive, its sums, their signature, latest.json; nothing else.
    let name = archive_name(version, &target);
    let mut files: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    files.sort();
    let mut expected = vec![
        name.clone(),
        "SHA256SUMS".to_string(),
        "SHA256SUMS.minisig".to_string(),
        "latest.json".to_string(),
    ];
    expected.sort();
    assert_eq!(files, expected);

    // The archive: odek at the top level beside LICENSE, README.md, the completions, the man
    // pages and the demo; sorted, owner 0, one file time, odek executable and byte-exact.
    let archive = out_dir.join(&name);
    let (order, entries) = read_archive(&archive);
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "entries are sorted");
    for required in [
        "odek",
        "LICENSE",
        "README.md",
        "completions/odek.bash",
        "completions/_odek",
        "completions/odek.fish",
        "man/man1/odek.1",
        "man/man1/odek-run.1",
        "examples/demo.jsonl",
    ] {
        assert!(entries.contains_key(required), "{required} in {order:?}");
    }
    for (name, (mode, uid, gid, mtime, _)) in &entries {
        assert_eq!((*uid, *gid), (0, 0), "{name}");
        assert_eq!(*mtime, 1_767_225_600, "{name}");
        assert!(!name.starts_with("./") && !name.starts_with('/'), "{name}");
        assert!(matches!(mode & 0o777, 0o644 | 0o755), "{name}: {mode:o}");
    }
    assert_eq!(entries["odek"].0 & 0o777, 0o755);
    assert_eq!(entries["odek"].4, fake_odek(version));
    assert_eq!(
        entries["LICENSE"].4,
        std::fs::read(repo().join("LICENSE")).unwrap()
    );
    let bash = String::from_utf8_lossy(&entries["completions/odek.bash"].4).to_string();
    assert!(bash.contains("odek"), "a bash completion script");

    // SHA256SUMS in sha256sum's format, file names only; latest.json as the contract says.
    let sums = std::fs::read_to_string(out_dir.join("SHA256SUMS")).unwrap();
    let archive_bytes = std::fs::read(&archive).unwrap();
    assert_eq!(sums, format!("{}  {name}\n", sha256_hex(&archive_bytes)));
    let latest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("latest.json")).unwrap())
            .unwrap();
    assert_eq!(
        latest,
        serde_json::json!({"version": version, "published": "2026-12-05T08:00:00Z",
                           "notes": "First \"release\"\nof odek."})
    );
    let verify = Command::new("minisign")
        .args(["-V", "-P", &pubkey, "-m"])
        .arg(out_dir.join("SHA256SUMS"))
        .output()
        .unwrap();
    assert_success(&verify);
    assert!(String::from_utf8_lossy(&verify.stdout).contains(&format!("odek {version}")));

    // The same inputs make the same bytes.
    let again = dir.path().join("dist-again");
    assert_success(&signed(&again));
    assert_eq!(std::fs::read(again.join(&name)).unwrap(), archive_bytes);

    // install.sh installs this very folder, the signature checked with the same key.
    let world = World::new();
    let release = release_dir(&world.root, version);
    std::fs::create_dir_all(&release).unwrap();
    for file in &files {
        std::fs::copy(out_dir.join(file), release.join(file)).unwrap();
    }
    publish_latest(&world.root, version);
    let out = world
        .command(true)
        .env("ODEK_RELEASE_PUBKEY", &pubkey)
        .output()
        .unwrap();
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("signature of SHA256SUMS verified"));
    assert_eq!(world.installed().unwrap(), fake_odek(version));

    // And `odek upgrade` takes it too: GNU tar's entries, the real minisign's legacy signature.
    let copy_dir = world.dir.path().join("odek-copy");
    std::fs::create_dir_all(&copy_dir).unwrap();
    let copy = copy_dir.join("odek");
    std::fs::copy(odek_binary(), &copy).unwrap();
    let out = Command::new(&copy)
        .args(["upgrade", "--to", version])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", world.home())
        .env("ODEK_HOME", world.home().join(".odek"))
        .env("TMPDIR", world.tmp())
        .env("ODEK_RELEASE_URL", world.server.base())
        .env("ODEK_RELEASE_PUBKEY", &pubkey)
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(std::fs::read(&copy).unwrap(), fake_odek(version));
}

#[test]
fn dist_sh_without_a_key_says_loudly_that_the_folder_is_unsigned() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("odek-prebuilt");
    std::fs::write(&binary, fake_odek(env!("CARGO_PKG_VERSION"))).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out_dir = dir.path().join("dist");
    let out = dist(
        &out_dir,
        &[("DIST_PREBUILT", &binary)],
        &[("DIST_TARGETS", "aarch64-apple-darwin")],
    );
    assert_success(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SHA256SUMS is NOT signed"),
        "{}",
        text(&out)
    );
    assert!(stderr.contains("`odek upgrade` will"), "{}", text(&out));
    assert!(!out_dir.join("SHA256SUMS.minisig").exists());
    assert!(out_dir.join("SHA256SUMS").exists());
    let latest = std::fs::read_to_string(out_dir.join("latest.json")).unwrap();
    let latest: serde_json::Value = serde_json::from_str(&latest).unwrap();
    // No DIST_NOTES and no CHANGELOG section: one line naming the version.
    assert!(
        latest["notes"]
            .as_str()
            .unwrap()
            .contains(env!("CARGO_PKG_VERSION"))
    );
    assert!(
        out_dir
            .join(archive_name(
                env!("CARGO_PKG_VERSION"),
                "aarch64-apple-darwin"
            ))
            .exists()
    );

    // Notes from a file: blank lines at either end dropped, tabs and backslashes escaped.
    let notes = dir.path().join("NOTES.md");
    std::fs::write(&notes, "\n\n- one\ttab\n- a back\\slash\n\n").unwrap();
    let out = dist(
        &out_dir,
        &[("DIST_PREBUILT", &binary), ("DIST_NOTES_FILE", &notes)],
        &[("DIST_TARGETS", "aarch64-apple-darwin")],
    );
    assert_success(&out);
    let latest = std::fs::read_to_string(out_dir.join("latest.json")).unwrap();
    let latest: serde_json::Value = serde_json::from_str(&latest).unwrap();
    assert_eq!(latest["notes"], "- one\ttab\n- a back\\slash");
}
