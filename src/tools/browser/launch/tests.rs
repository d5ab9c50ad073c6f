use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::{choose, find_executable, flags, launch, search, sweep_left_profiles};
use crate::tools::browser::{AllowLocal, BrowserSettings};

fn settings(executable: PathBuf) -> BrowserSettings {
    BrowserSettings {
        executable,
        allow_local: AllowLocal::Loopback,
        web: Arc::default(),
        timeout: Duration::from_secs(30),
        images: false,
    }
}

fn program(dir: &Path, name: &str, script: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("dir");
    let file = dir.join(name);
    std::fs::write(&file, format!("#!/bin/sh\n{script}\n")).expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    file
}

#[test]
fn the_sandbox_is_turned_off_only_for_root_and_the_profile_is_the_given_folder() {
    let profile = Path::new("/tmp/odek-browser-x");
    for (root, expected) in [(true, true), (false, false)] {
        let flags = flags(profile, root);
        assert_eq!(flags.iter().any(|f| f == "--no-sandbox"), expected);
        assert!(
            flags
                .iter()
                .any(|f| f == "--user-data-dir=/tmp/odek-browser-x")
        );
        assert!(flags.iter().any(|f| f == "--remote-debugging-pipe"));
        assert_eq!(
            flags.last().map(|f| f.as_os_str()),
            Some("about:blank".as_ref())
        );
    }
}

#[test]
fn a_browser_in_a_place_commands_may_write_is_never_chosen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("tree");
    let planted = program(&tree, "chromium", "exit 0");
    program(&dir.path().join("safe"), "chromium", "exit 0");
    let path = std::env::join_paths([tree.clone(), dir.path().join("safe")]).expect("join");
    let found = search(&path, std::slice::from_ref(&tree)).expect("found");
    let safe = dir.path().join("safe").canonicalize().expect("real");
    assert_eq!(found, safe.join("chromium"));
    assert_ne!(found, planted);
}

#[test]
fn a_configured_path_is_taken_as_it_is_and_a_bare_name_is_looked_up_on_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mine = program(dir.path(), "my-chrome", "exit 0");
    assert_eq!(find_executable(Some(&mine)), Some(mine));
    let bin = dir.path().join("bin");
    program(&bin, "chrome-beta", "exit 0");
    let tree = dir.path().join("tree");
    program(&tree, "chrome-beta", "exit 0");
    let path = std::env::join_paths([&tree, &bin]).expect("join");
    let found = choose(
        Some(Path::new("chrome-beta")),
        &path,
        std::slice::from_ref(&tree),
    );
    let bin = bin.canonicalize().expect("real");
    assert_eq!(found, Some(bin.join("chrome-beta")));
}

/// A profile as Chromium leaves it: its lock naming the browser's pid, its socket in a
/// folder of the temporary folder.
fn left_profile(temp: &Path, name: &str, pid: u32) -> (PathBuf, PathBuf) {
    let profile = temp.join(name);
    let socket = temp.join(format!("org.chromium.Chromium.{name}"));
    std::fs::create_dir_all(&profile).expect("profile");
    std::fs::create_dir_all(&socket).expect("socket");
    let link = |to: PathBuf, at: &str| std::os::unix::fs::symlink(to, profile.join(at));
    link(format!("my-host-{pid}").into(), "SingletonLock").expect("lock");
    link(socket.join("SingletonSocket"), "SingletonSocket").expect("link");
    (profile, socket)
}

#[test]
fn a_profile_whose_browser_is_gone_is_swept_with_its_socket_folder_and_no_other() {
    let temp = tempfile::tempdir().expect("tempdir");
    let mut ended = std::process::Command::new("true").spawn().expect("true");
    let gone = ended.id();
    ended.wait().expect("wait");
    let (dead, dead_socket) = left_profile(temp.path(), "odek-browser-dead", gone);
    let (live, live_socket) = left_profile(temp.path(), "odek-browser-live", std::process::id());
    let (other, _) = left_profile(temp.path(), "someone-else", gone);
    let unlocked = temp.path().join("odek-browser-starting");
    std::fs::create_dir(&unlocked).expect("dir");
    // A socket link into another folder: the profile goes, that folder is not touched.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let (astray, _) = left_profile(temp.path(), "odek-browser-astray", gone);
    let foreign = elsewhere.path().join("org.chromium.Chromium.x");
    std::fs::create_dir(&foreign).expect("foreign");
    std::fs::remove_file(astray.join("SingletonSocket")).expect("unlink");
    std::os::unix::fs::symlink(
        foreign.join("SingletonSocket"),
        astray.join("SingletonSocket"),
    )
    .expect("link");
    sweep_left_profiles(temp.path());
    assert!(!dead.exists() && !dead_socket.exists() && !astray.exists());
    for kept in [live, live_socket, other, unlocked, foreign] {
        assert!(kept.exists(), "{} swept", kept.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_is_not_a_browser_fails_with_what_it_said() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = program(
        dir.path(),
        "fake",
        "echo 'unknown flag --headless' >&2; exit 3",
    );
    let Err(error) = launch(&settings(fake.clone())).await else {
        panic!("a shell script answered as a browser");
    };
    let expected = format!(
        "browser: {} did not start as a browser (the browser ended); it said: unknown flag \
         --headless; set browser.executable to a Chromium or Chrome",
        fake.display()
    );
    assert_eq!(error.0, expected);
    let missing = launch(&settings(dir.path().join("absent"))).await;
    let error = missing.err().expect("no program");
    assert!(error.0.starts_with("browser: cannot start "), "{}", error.0);
}

/// The real browser (`.ci/run` installs Chromium): it starts, answers on the pipe, gives a
/// page, and its whole group and its profile folder are gone once it is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_answers_on_the_pipe_and_leaves_nothing_once_dropped() {
    let chromium = find_executable(None).expect("Chromium or Chrome on PATH (.ci/run installs it)");
    let browser = launch(&settings(chromium)).await.expect("launch");
    let session = browser.new_page().await.expect("page");
    // The flags leave navigation working (one of them once aborted every navigation).
    let go = json!({"url": "data:text/html,<p>odek</p>"});
    let went = browser.cdp.call(Some(&session), "Page.navigate", go).await;
    assert_eq!(went.expect("navigate").get("errorText"), None);
    let evaluate = json!({"expression": "6 * 7", "returnByValue": true});
    let answer = browser
        .cdp
        .call(Some(&session), "Runtime.evaluate", evaluate)
        .await;
    assert_eq!(
        answer.expect("evaluate").pointer("/result/value"),
        Some(&json!(42))
    );
    let pgid = browser.group.pgid().expect("group");
    let profile = browser
        .profile
        .as_ref()
        .expect("profile")
        .path()
        .to_path_buf();
    let preferences = std::fs::read_to_string(profile.join("Default/Preferences")).expect("prefs");
    assert!(
        preferences.contains(r#""network_prediction_options":2"#),
        "{preferences}"
    );
    let socket = std::fs::read_link(profile.join("SingletonSocket")).ok();
    let socket = socket.and_then(|s| Some(s.parent()?.to_path_buf()));
    let cdp = browser.cdp.clone();
    drop(browser);
    assert!(!profile.exists(), "{} left", profile.display());
    let socket = socket.expect("Chromium's SingletonSocket link");
    assert!(!socket.exists(), "{} left", socket.display());
    // Every process of the group ends (zombies aside, which odek's reaper collects).
    let mut alive = true;
    for _ in 0..500 {
        alive = group_has_live_process(pgid);
        if !alive {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!alive, "the browser's group {pgid} still runs");
    let after = cdp.call(None, "Browser.getVersion", json!({})).await;
    assert_eq!(after.expect_err("ended").0, super::super::cdp::ENDED);
}

/// True when a process of group `pgid` runs (not a zombie): Linux's `/proc`, elsewhere the
/// group's existence.
fn group_has_live_process(pgid: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let entries = std::fs::read_dir("/proc").expect("proc");
        entries.flatten().any(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let Some(rest) = stat.rfind(')').and_then(|at| stat.get(at + 2..)) else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.first().is_some_and(|state| *state != "Z")
                && fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        crate::process_group::process_alive(-pgid)
    }
}
