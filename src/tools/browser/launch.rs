//! Finding and starting the browser: headless, a fresh profile in a temporary folder, the
//! DevTools Protocol on descriptors 3 (commands) and 4 (replies and events), in a process
//! group of its own that ends with the [`Browser`] — and with odek, even killed outright.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::BrowserSettings;
use super::cdp::Cdp;
use crate::process_group::{self, GroupGuard};
use crate::tools::ToolError;
use crate::tools::background::Watched;

/// The program names looked up on `PATH`, in this order.
const NAMES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
];

/// Where the apps install themselves on macOS.
#[cfg(target_os = "macos")]
const APPS: &[&str] = &[
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
];
/// No app folder elsewhere.
#[cfg(not(target_os = "macos"))]
const APPS: &[&str] = &[];

/// Flags of every start (puppeteer's defaults, less what odek does over the protocol).
const FLAGS: &[&str] = &[
    "--headless=new",
    "--remote-debugging-pipe",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--disable-features=Translate,OptimizationHints,MediaRouter",
    "--disable-quic",
    "--deny-permission-prompts",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--mute-audio",
    "--hide-scrollbars",
    "--password-store=basic",
    "--use-mock-keychain",
    "--window-size=1280,800",
];

/// The fresh profile's preferences: no network prediction, since a page's
/// `<link rel=preconnect>` opens a connection without any request the guard could pause.
const PREFERENCES: &str = r#"{"net":{"network_prediction_options":2}}"#;

/// The bytes of the browser's error output kept for a failed start.
const KEPT_OUTPUT: usize = 2048;

/// A running browser: its connection, and what ends it (its process group, the profile
/// folder) when dropped.
pub struct Browser {
    /// The connection.
    pub cdp: Arc<Cdp>,
    group: GroupGuard,
    _watched: Watched,
    child: tokio::process::Child,
    profile: Option<tempfile::TempDir>,
}

impl Browser {
    /// A page to drive, attached with its own session (the one the browser opened at start,
    /// else a new one): the `sessionId` its commands carry.
    pub async fn new_page(&self) -> Result<String, ToolError> {
        let targets = self.cdp.call(None, "Target.getTargets", json!({})).await?;
        let open = targets
            .pointer("/targetInfos")
            .and_then(Value::as_array)
            .and_then(|all| all.iter().find(|t| t["type"] == "page"))
            .map(|t| t["targetId"].clone());
        let target = match open {
            Some(target) => target,
            None => {
                let made = json!({"url": "about:blank"});
                let made = self.cdp.call(None, "Target.createTarget", made).await?;
                made["targetId"].clone()
            }
        };
        let attach = json!({"targetId": target, "flatten": true});
        let attached = self.cdp.call(None, "Target.attachToTarget", attach).await?;
        match attached["sessionId"].as_str() {
            Some(session) => Ok(session.to_owned()),
            None => Err(ToolError::new("browser: the page gave no session")),
        }
    }
}

impl Drop for Browser {
    /// Kills the group, waits briefly for the browser to go, reaps the helpers odek adopted
    /// when the browser ended, removes the profile folder.
    fn drop(&mut self) {
        let pgid = self.group.pgid();
        self.group.kill_now();
        for _ in 0..50 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // What odek adopted of it: the group's helpers, and the crash handler, which runs in
        // a session of its own and ends when the browser has.
        if let Some(pgid) = pgid {
            process_group::reap_group(pgid);
        }
        process_group::reap_adopted("chrome_crashpad");
        if let Some(profile) = self.profile.take() {
            let path = profile.keep();
            // A process of the group still writing in it: once more, a moment later.
            if !remove_profile(&path, &std::env::temp_dir()) {
                std::thread::sleep(Duration::from_millis(50));
                let _ = std::fs::remove_dir_all(path);
            }
        }
    }
}

/// Removes a profile folder and the folder of its `SingletonSocket`, which Chromium makes
/// in the temporary folder `temp` and cannot remove when killed. True when the profile went.
fn remove_profile(profile: &Path, temp: &Path) -> bool {
    if let Ok(socket) = std::fs::read_link(profile.join("SingletonSocket"))
        && let Some(folder) = socket.parent()
        && folder.parent().and_then(|p| p.canonicalize().ok()) == temp.canonicalize().ok()
        && folder.file_name().is_some_and(|name| {
            let name = name.as_encoded_bytes();
            name.starts_with(b"org.chromium.") || name.starts_with(b"com.google.")
        })
    {
        let _ = std::fs::remove_dir_all(folder);
    }
    std::fs::remove_dir_all(profile).is_ok()
}

/// Removes what the browsers of odeks killed outright left in `temp`: each `odek-browser-*`
/// profile whose browser (the pid its `SingletonLock` names) is gone, with its socket folder.
/// A profile without that lock, or whose browser runs, is left alone.
fn sweep_left_profiles(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .as_encoded_bytes()
            .starts_with(b"odek-browser-")
        {
            continue;
        }
        let profile = entry.path();
        let lock = std::fs::read_link(profile.join("SingletonLock")).unwrap_or_default();
        let pid = lock
            .to_str()
            .and_then(|l| l.rsplit('-').next()?.parse::<i32>().ok());
        if pid.is_some_and(|pid| pid > 0 && !runs(pid)) {
            remove_profile(&profile, temp);
        }
    }
}

/// True while process `pid` runs: on Linux a zombie (ended, its parent gone, not yet
/// reaped by init) does not.
fn runs(pid: i32) -> bool {
    #[cfg(target_os = "linux")]
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        && let Some(state) = stat.rfind(')').and_then(|at| stat.get(at + 2..at + 3))
    {
        return state != "Z" && state != "X";
    }
    crate::process_group::process_alive(pid)
}

/// Starts the browser headless with a fresh profile and checks that it answers.
///
/// Call it from an async task, never inside `spawn_blocking`: on Linux the browser is killed
/// when the thread that started it ends (`PR_SET_PDEATHSIG`), and blocking threads end when
/// idle.
pub async fn launch(settings: &BrowserSettings) -> Result<Browser, ToolError> {
    let program = &settings.executable;
    let failed = |what: &str, e: std::io::Error| {
        ToolError::new(format!(
            "browser: cannot {what} for {}: {e}",
            program.display()
        ))
    };
    sweep_left_profiles(&std::env::temp_dir());
    let profile = tempfile::Builder::new()
        .prefix("odek-browser-")
        .tempdir()
        .map_err(|e| failed("make a profile folder", e))?;
    let settled = profile.path().join("Default");
    std::fs::create_dir(&settled)
        .and_then(|()| std::fs::write(settled.join("Preferences"), PREFERENCES))
        .map_err(|e| failed("write the profile", e))?;
    let (commands, command_writer) = std::io::pipe().map_err(|e| failed("make a pipe", e))?;
    let (message_reader, messages) = std::io::pipe().map_err(|e| failed("make a pipe", e))?;
    let commands = above_standard(commands).map_err(|e| failed("move a pipe", e))?;
    let messages = above_standard(messages).map_err(|e| failed("move a pipe", e))?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(flags(profile.path(), runs_as_root()))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    crate::process_group::hide_keys(&mut cmd);
    give_pipes(&mut cmd, commands.as_raw_fd(), messages.as_raw_fd());
    let mut child = cmd.spawn().map_err(|e| {
        ToolError::new(format!(
            "browser: cannot start {}: {e}; set browser.executable to a Chromium or Chrome",
            program.display()
        ))
    })?;
    drop((commands, messages));
    let group = GroupGuard::new(child.id().and_then(|id| i32::try_from(id).ok()));
    let watched = Watched::new(group.pgid());
    let output = child
        .stderr
        .take()
        .map(|err| tokio::spawn(first_output(err)));
    let cdp = Cdp::new(command_writer, message_reader, settings.timeout)
        .map_err(|e| failed("read the pipe", e))?;
    let mut browser = Browser {
        cdp,
        group,
        _watched: watched,
        child,
        profile: Some(profile),
    };
    match browser
        .cdp
        .call(None, "Browser.getVersion", json!({}))
        .await
    {
        Ok(_) => Ok(browser),
        Err(error) => {
            // Its output ends with it.
            browser.group.kill_now();
            let said = match output {
                Some(task) => tokio::time::timeout(Duration::from_secs(2), task).await,
                None => Ok(Ok(Vec::new())),
            };
            let said = said.ok().and_then(Result::ok).unwrap_or_default();
            Err(ToolError::new(not_a_browser(program, &error, &said)))
        }
    }
}

/// The error of a program that did not answer as a browser, with what it said.
fn not_a_browser(program: &Path, error: &ToolError, said: &[u8]) -> String {
    let why = error.0.trim_start_matches("browser: ");
    let said = String::from_utf8_lossy(said);
    let said = said.trim();
    let mut text = format!(
        "browser: {} did not start as a browser ({why})",
        program.display()
    );
    if !said.is_empty() {
        text.push_str("; it said: ");
        text.push_str(said);
    }
    text.push_str("; set browser.executable to a Chromium or Chrome");
    text
}

/// Reads the browser's error output to its end (so it never blocks writing), keeping the
/// first [`KEPT_OUTPUT`] bytes.
async fn first_output(mut output: tokio::process::ChildStderr) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(read @ 1..) = output.read(&mut chunk).await {
        let room = KEPT_OUTPUT.saturating_sub(kept.len()).min(read);
        kept.extend_from_slice(&chunk[..room]);
    }
    kept
}

/// The command line after the program: [`FLAGS`], the profile, `--no-sandbox` as root
/// (Chromium refuses to run as root with its sandbox), the first page.
fn flags(profile: &Path, root: bool) -> Vec<OsString> {
    let mut flags: Vec<OsString> = FLAGS.iter().map(OsString::from).collect();
    let mut folder = OsString::from("--user-data-dir=");
    folder.push(profile);
    flags.push(folder);
    if root {
        flags.push("--no-sandbox".into());
    }
    flags.push("about:blank".into());
    flags
}

/// True when odek runs as root (effective user id 0).
fn runs_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and touches no memory.
    #[allow(unsafe_code)]
    let euid = unsafe { libc::geteuid() };
    euid == 0
}

/// A copy of `fd` numbered 10 or above (close-on-exec), so that putting the two pipe ends
/// on 3 and 4 in the child cannot overwrite one with the other.
#[allow(unsafe_code)]
fn above_standard(fd: impl AsFd) -> std::io::Result<OwnedFd> {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) reads a descriptor we own and makes a new one.
    let copy = unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
    if copy < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `copy` is a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

/// Puts `commands` on the child's descriptor 3 and `messages` on 4 (as `dup2` copies, which
/// lose close-on-exec), and on Linux has the kernel kill the browser should odek die
/// (`PR_SET_PDEATHSIG`; elsewhere the watchdog of `tools::background` does, which also
/// stops the rest of the group on Linux).
#[allow(unsafe_code)]
fn give_pipes(cmd: &mut tokio::process::Command, commands: RawFd, messages: RawFd) {
    // SAFETY: between fork and exec only dup2 and prctl are called, both async-signal-safe;
    // both descriptors are 10 or above, so neither dup2 overwrites the other's source.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(commands, 3) < 0 || libc::dup2(messages, 4) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// The browser to use: `configured` when it is a path to a file, or a bare name found on
/// PATH; else the first of the usual names on PATH; then the macOS app paths. PATH entries
/// beneath the places commands may write (the temporary folder, the working directory)
/// are skipped, and a bare name never means a file of the working directory. None = no
/// browser, the tool is not offered.
pub fn find_executable(configured: Option<&Path>) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut refused = vec![std::env::temp_dir()];
    refused.extend(std::env::current_dir().ok());
    choose(configured, &path, &refused)
}

/// [`find_executable`] over the given PATH and refused places.
fn choose(configured: Option<&Path>, path: &OsStr, refused: &[PathBuf]) -> Option<PathBuf> {
    if let Some(program) = configured {
        let found = match program.to_str().filter(|name| !name.contains('/')) {
            Some(name) => crate::process_group::find_in_path(name, path, refused),
            None => program.is_file().then(|| program.to_path_buf()),
        };
        if found.is_some() {
            return found;
        }
    }
    search(path, refused)
}

/// The first of [`NAMES`] in `path`'s entries not beneath `refused`, else of [`APPS`].
fn search(path: &OsStr, refused: &[PathBuf]) -> Option<PathBuf> {
    NAMES
        .iter()
        .find_map(|name| crate::process_group::find_in_path(name, path, refused))
        .or_else(|| APPS.iter().map(PathBuf::from).find(|app| app.is_file()))
}

#[cfg(test)]
mod tests;
