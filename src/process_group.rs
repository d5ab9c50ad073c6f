//! Processes: signals to the process groups odek starts (shell commands, MCP servers, and
//! later sub-agents), a guard that kills a group however its owner ends, the termination
//! signals every long-running command stops on, the environment those programs get (never a
//! variable that holds one of odek's keys) and odek's own hardening.

use std::sync::{Mutex, PoisonError};

/// Variables holding odek's own secrets, removed from the environment of every program odek
/// starts (shell commands, MCP servers, sub-agents).
pub const HIDDEN_ENV: &[&str] = &[
    "ODEK_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "ODEK_TELEGRAM_TOKEN",
    "ODEK_EMBEDDINGS_API_KEY",
];

/// The keys odek holds (the API key, the Telegram token, the embeddings key), whatever
/// variable they came from.
static KEYS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Registers a key odek holds: no program it starts gets a variable whose value holds it
/// (a key configured as `"${MY_KEY}"` hides `MY_KEY` too). Values under 8 bytes are ignored.
pub fn register_key(value: &str) {
    let value = value.trim();
    if value.len() < 8 {
        return;
    }
    let mut keys = KEYS.lock().unwrap_or_else(PoisonError::into_inner);
    if !keys.iter().any(|k| k == value) {
        keys.push(value.to_string());
    }
}

/// The variables of this process a program odek starts must not get: [`HIDDEN_ENV`], and
/// every variable whose value holds a registered key.
pub fn hidden_variables() -> Vec<std::ffi::OsString> {
    let keys = KEYS.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let mut hidden: Vec<std::ffi::OsString> = HIDDEN_ENV.iter().map(Into::into).collect();
    for (name, value) in std::env::vars_os() {
        let value = value.to_string_lossy();
        if keys.iter().any(|key| value.contains(key.as_str())) {
            hidden.push(name);
        }
    }
    hidden
}

/// Removes [`hidden_variables`] from what `cmd` passes on.
pub fn hide_keys(cmd: &mut tokio::process::Command) {
    for name in hidden_variables() {
        cmd.env_remove(name);
    }
}

/// Makes this process as hard to inspect as the system allows, and sets its core file limit
/// to 0 everywhere (docs/PLATFORMS.md):
/// - Linux: non-dumpable (`PR_SET_DUMPABLE`): no core file, no `ptrace` attach and no reading
///   of its `/proc/<pid>/mem` or `environ` by other processes of the same user. Programs it
///   starts are dumpable again after their `exec`.
/// - macOS: `ptrace(PT_DENY_ATTACH)`: no debugger or `task_for_pid` inspection attaches (one
///   already attached ends odek); the programs it starts do not inherit it. Its environment
///   stays readable by the same user (`ps -E`), which [`wipe_environ_block`] blanks.
/// - other Unix: the core file limit only.
pub fn harden() {
    deny_inspection();
    let none = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit(RLIMIT_CORE) reads a local struct and touches no other memory.
    #[allow(unsafe_code)]
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &none);
    }
}

/// Linux: this process becomes non-dumpable.
#[cfg(target_os = "linux")]
fn deny_inspection() {
    // SAFETY: prctl(PR_SET_DUMPABLE) takes plain integers and touches no memory.
    #[allow(unsafe_code)]
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// macOS: no debugger may attach to this process.
#[cfg(target_os = "macos")]
fn deny_inspection() {
    // SAFETY: ptrace(PT_DENY_ATTACH) takes no address and touches no memory of ours.
    #[allow(unsafe_code)]
    unsafe {
        libc::ptrace(libc::PT_DENY_ATTACH, 0, std::ptr::null_mut(), 0);
    }
}

/// Other Unix: nothing beyond the core file limit ([`harden`]).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn deny_inspection() {}

/// Blanks the values in the block of environment strings the kernel laid out when odek
/// started — what Linux shows as `/proc/<pid>/environ` (even to root, who is not stopped by
/// [`harden`]) and macOS as `ps -E` (to the same user) —, after moving every variable into
/// memory of its own, so odek and the programs it starts still see them. Call it before any
/// thread starts. Names stay readable; a value becomes NUL bytes. Does nothing when the
/// strings do not lie end to end in one block (see [`block_of`]).
pub fn wipe_environ_block() {
    let original = environ_entries();
    let Some(block) = block_of(original.iter().map(|&entry| entry_span(entry))) else {
        return;
    };
    for (name, value) in std::env::vars_os() {
        let bytes = name.as_encoded_bytes();
        if bytes.is_empty() || bytes.contains(&b'=') {
            continue; // left where it is, so the check below leaves the block alone
        }
        // SAFETY: called from `main` before any thread exists, so nothing reads the
        // environment concurrently; `setenv` copies the entry into memory of its own.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var(name, value);
        }
    }
    // An entry the C library did not move: leave the block alone rather than blank it.
    let in_block = |entry: &*const libc::c_char| block.contains(&(*entry as usize));
    if environ_entries().iter().any(in_block) {
        return;
    }
    blank_values(block);
}

/// The bytes an entry of `environ` takes: its string and the NUL after it.
fn entry_span(entry: *const libc::c_char) -> std::ops::Range<usize> {
    // SAFETY: `entry` is one of the C library's NUL-terminated `environ` strings, unchanged
    // while we read (see `wipe_environ_block`).
    #[allow(unsafe_code)]
    let len = unsafe { std::ffi::CStr::from_ptr(entry) }.to_bytes().len();
    entry as usize..entry as usize + len + 1
}

/// The one block `spans` fill when they lie end to end, in any order and without a gap (as
/// the kernel lays out a new program's environment, on Linux and macOS alike); `None` for
/// no span, a gap or an overlap — an entry some code put there before `main` (a preloaded
/// library's `putenv`), which must not be written to.
fn block_of(spans: impl Iterator<Item = std::ops::Range<usize>>) -> Option<std::ops::Range<usize>> {
    let mut spans: Vec<std::ops::Range<usize>> = spans.collect();
    spans.sort_by_key(|span| span.start);
    let joined = spans.windows(2).all(|pair| pair[0].end == pair[1].start);
    (joined && !spans.is_empty()).then(|| spans[0].start..spans[spans.len() - 1].end)
}

/// The C library's `environ` array (macOS: through `_NSGetEnviron`, as a program's own
/// `environ` symbol is not visible to a library there).
fn environ_array() -> *const *const libc::c_char {
    #[cfg(target_os = "macos")]
    {
        // SAFETY: `_NSGetEnviron` has no preconditions; it returns the address of `environ`.
        #[allow(unsafe_code)]
        unsafe {
            (*libc::_NSGetEnviron()).cast_const().cast()
        }
    }
    #[cfg(not(target_os = "macos"))]
    {
        // SAFETY: declares the C library's `environ`, which glibc, musl and the BSDs define.
        #[allow(unsafe_code)]
        unsafe extern "C" {
            static environ: *const *const libc::c_char;
        }
        // SAFETY: reads the pointer; no thread changes it (see `wipe_environ_block`).
        #[allow(unsafe_code)]
        unsafe {
            environ
        }
    }
}

/// The C library's current `environ` pointers.
fn environ_entries() -> Vec<*const libc::c_char> {
    let mut entries = Vec::new();
    // SAFETY: `environ` is the C library's NULL-terminated array of entries; no thread changes
    // it while we read (see `wipe_environ_block`).
    #[allow(unsafe_code)]
    unsafe {
        let mut at = environ_array();
        while !at.is_null() && !(*at).is_null() {
            entries.push(*at);
            at = at.add(1);
        }
    }
    entries
}

/// Overwrites, in `block`, every byte after an entry's first `=` up to its NUL with NUL.
fn blank_values(block: std::ops::Range<usize>) {
    // SAFETY: the range is this process's own environment block on its stack (mapped and
    // writable for the life of the process); no pointer into it remains in use (checked by the
    // caller), so writing to it changes nothing any code reads.
    #[allow(unsafe_code)]
    unsafe {
        let bytes = std::slice::from_raw_parts_mut(block.start as *mut u8, block.len());
        let mut in_value = false;
        for byte in bytes.iter_mut() {
            match (*byte, in_value) {
                (0, _) => in_value = false,
                (b'=', false) => in_value = true,
                (_, true) => *byte = 0,
                _ => {}
            }
        }
    }
}

/// A program odek itself runs outside the sandbox: `git` for shell checkpoints, `sh` for hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrustedProgram {
    /// `git`, for the shadow repository of shell checkpoints.
    Git,
    /// `sh`, which runs hook commands.
    Sh,
}

impl TrustedProgram {
    /// The program's name, as looked up on `PATH`.
    pub fn name(self) -> &'static str {
        match self {
            TrustedProgram::Git => "git",
            TrustedProgram::Sh => "sh",
        }
    }
}

/// Where each [`TrustedProgram`] was found (git, sh), resolved once per process.
static TRUSTED: std::sync::OnceLock<[Option<std::path::PathBuf>; 2]> = std::sync::OnceLock::new();

/// Resolves `git` and `sh` once, skipping every `PATH` entry beneath one of `refused` (the
/// places shell commands may write: the working tree, `$TMPDIR`, `sandbox_allow_write`) and
/// every relative entry. Only the first call counts; a lookup before it refuses the current
/// directory and the temporary directory.
pub fn resolve_trusted_programs(refused: &[std::path::PathBuf]) {
    let _ = TRUSTED.get_or_init(|| resolve_all(refused));
}

/// The absolute path `program` resolved to, or `None` when it is found only in a refused
/// place (or not at all).
pub fn trusted_program(program: TrustedProgram) -> Option<std::path::PathBuf> {
    let found = TRUSTED.get_or_init(|| {
        let mut refused = vec![std::env::temp_dir()];
        refused.extend(std::env::current_dir().ok());
        resolve_all(&refused)
    });
    found[program as usize].clone()
}

fn resolve_all(refused: &[std::path::PathBuf]) -> [Option<std::path::PathBuf>; 2] {
    let path = std::env::var_os("PATH").unwrap_or_default();
    [TrustedProgram::Git, TrustedProgram::Sh]
        .map(|program| find_in_path(program.name(), &path, refused))
}

/// The first executable `name` in `path`'s entries (in their order, then `/usr/bin` and
/// `/bin`) whose folder is absolute and not beneath any of `refused` (both compared with
/// links resolved).
pub fn find_in_path(
    name: &str,
    path: &std::ffi::OsStr,
    refused: &[std::path::PathBuf],
) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let refused: Vec<std::path::PathBuf> = refused
        .iter()
        .map(|place| place.canonicalize().unwrap_or_else(|_| place.clone()))
        .collect();
    let fallback = [std::path::PathBuf::from("/usr/bin"), "/bin".into()];
    std::env::split_paths(path)
        .chain(fallback)
        .filter(|dir| dir.is_absolute())
        .filter_map(|dir| dir.canonicalize().ok())
        .filter(|dir| !refused.iter().any(|place| dir.starts_with(place)))
        .map(|dir| dir.join(name))
        .find(|file| {
            let outside = file
                .canonicalize()
                .is_ok_and(|real| !refused.iter().any(|place| real.starts_with(place)));
            outside
                && std::fs::metadata(file)
                    .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// Makes odek the reaper of orphans below it (Linux: `PR_SET_CHILD_SUBREAPER`): a program a
/// command started that left its group or session (`setsid -f`, `timeout`) and whose parent
/// ended becomes odek's child instead of init's, so [`end_leftovers`] finds it. Elsewhere it
/// does nothing.
pub fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) takes plain integers and touches no memory.
    #[allow(unsafe_code)]
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Kills whatever still runs as odek's child as odek ends — with its process group, or its
/// session's when it made one — so no command's process outlives odek. What a killed one
/// leaves is adopted by odek in turn ([`adopt_orphans`]) and killed in the next round (a
/// few rounds at most). Finds them through `/proc` on Linux and `libproc` on macOS; on other
/// Unix it finds nothing (docs/PLATFORMS.md).
pub fn end_leftovers() {
    let me = std::process::id();
    // SAFETY: getpgrp has no preconditions.
    #[allow(unsafe_code)]
    let own_group = unsafe { libc::getpgrp() };
    for _ in 0..50 {
        let children = live_children(me);
        if children.is_empty() {
            return;
        }
        for (pid, pgrp) in children {
            if pgrp != own_group && pgrp > 1 {
                kill_group(pgrp);
            }
            // SAFETY: kill has no memory-safety preconditions.
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The children of `parent` that have not ended (zombies left out): pid and process group.
#[cfg(target_os = "linux")]
fn live_children(parent: u32) -> Vec<(i32, i32)> {
    proc_children(parent)
        .into_iter()
        .filter(|child| child.state != "Z" && child.state != "X")
        .map(|child| (child.pid, child.pgrp))
        .collect()
}

/// A child process as `/proc/PID/stat` shows it.
#[cfg(target_os = "linux")]
struct ProcChild {
    pid: i32,
    /// The kernel's command name (15 bytes at most).
    name: String,
    /// `R`, `S`, … `Z` for one that ended and was not waited for.
    state: String,
    pgrp: i32,
}

/// Every child of `parent`, from `/proc`.
#[cfg(target_os = "linux")]
fn proc_children(parent: u32) -> Vec<ProcChild> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (open, close) = (stat.find('(')?, stat.rfind(')')?);
            let mut fields = stat.get(close + 2..)?.split_whitespace();
            let (state, ppid, pgrp) = (fields.next()?, fields.next()?, fields.next()?);
            (ppid.parse::<u32>().ok()? == parent).then(|| ProcChild {
                pid,
                name: stat.get(open + 1..close).unwrap_or_default().to_string(),
                state: state.to_string(),
                pgrp: pgrp.parse().unwrap_or(0),
            })
        })
        .collect()
}

/// The children of `parent` that have not ended (zombies left out): pid and process group,
/// from `proc_listchildpids` and each child's `PROC_PIDT_SHORTBSDINFO`.
#[cfg(target_os = "macos")]
fn live_children(parent: u32) -> Vec<(i32, i32)> {
    const MAX: usize = 4096;
    let Ok(parent) = i32::try_from(parent) else {
        return Vec::new();
    };
    let mut pids: Vec<libc::pid_t> = vec![0; MAX];
    let bytes = i32::try_from(std::mem::size_of_val(pids.as_slice())).unwrap_or(i32::MAX);
    // SAFETY: the buffer holds `bytes` bytes of pids; the call writes at most that many.
    #[allow(unsafe_code)]
    let found = unsafe { libc::proc_listchildpids(parent, pids.as_mut_ptr().cast(), bytes) };
    // A count of pids (older systems said bytes: the zeros past the end are skipped).
    let found = usize::try_from(found).unwrap_or(0).min(MAX);
    pids[..found]
        .iter()
        .filter(|&&pid| pid > 0)
        .filter_map(|&pid| {
            // SAFETY: an all-zero proc_bsdshortinfo is a valid value (integers and bytes).
            #[allow(unsafe_code)]
            let mut info: libc::proc_bsdshortinfo = unsafe { std::mem::zeroed() };
            let size = i32::try_from(std::mem::size_of_val(&info)).ok()?;
            // SAFETY: `info` is a local of the flavour's size; the call writes at most `size`.
            #[allow(unsafe_code)]
            let read = unsafe {
                libc::proc_pidinfo(
                    pid,
                    libc::PROC_PIDT_SHORTBSDINFO,
                    0,
                    (&raw mut info).cast(),
                    size,
                )
            };
            let alive = read == size && info.pbsi_status != libc::SZOMB;
            (alive && i32::try_from(info.pbsi_ppid).ok()? == parent)
                .then_some((pid, i32::try_from(info.pbsi_pgid).ok()?))
        })
        .collect()
}

/// Other Unix: no way to list a process's children here (docs/PLATFORMS.md).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn live_children(_parent: u32) -> Vec<(i32, i32)> {
    Vec::new()
}

/// True unless process `pid` is known to be gone (a process of another user counts as
/// alive).
pub fn process_alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    #[allow(unsafe_code)]
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Sends `signal` to the process group `pgid`.
pub fn signal_group(pgid: i32, signal: i32) {
    // SAFETY: killpg has no memory-safety preconditions; a stale group id only yields ESRCH.
    #[allow(unsafe_code)]
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Kills the process group `pgid` at once (SIGKILL).
pub fn kill_group(pgid: i32) {
    signal_group(pgid, libc::SIGKILL);
}

/// Reaps the processes of group `pgid` that ended as odek's children — programs of the
/// group odek adopted ([`adopt_orphans`]) when their parent ended, which would stay zombies
/// until odek ends. Waits up to ~200 ms for those still ending (already killed).
pub fn reap_group(pgid: i32) {
    for _ in 0..20 {
        // SAFETY: waitpid with a null status pointer writes nothing.
        #[allow(unsafe_code)]
        let reaped = unsafe { libc::waitpid(-pgid, std::ptr::null_mut(), libc::WNOHANG) };
        match reaped {
            0 => std::thread::sleep(std::time::Duration::from_millis(10)),
            r if r > 0 => {}
            _ => return,
        }
    }
}

/// Reaps the children of odek named `name` (the kernel's 15-byte command name) that have
/// ended: daemons a child started in a session of their own (a browser's crash handler),
/// adopted by odek and never started by it, so nothing else waits for them. Looks a few
/// times over ~100 ms, until it finds some (Linux; elsewhere nothing is adopted).
pub fn reap_adopted(name: &str) {
    #[cfg(target_os = "linux")]
    for _ in 0..10 {
        let ended = ended_children_named(std::process::id(), name);
        for &pid in &ended {
            // SAFETY: waitpid with a null status pointer writes nothing.
            #[allow(unsafe_code)]
            unsafe {
                libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG);
            }
        }
        if !ended.is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = name;
}

/// The children of `parent` named `name` that ended (zombies).
#[cfg(target_os = "linux")]
fn ended_children_named(parent: u32, name: &str) -> Vec<i32> {
    proc_children(parent)
        .into_iter()
        .filter(|child| child.state == "Z" && child.name == name)
        .map(|child| child.pid)
        .collect()
}

/// Kills a process group when dropped — on a normal end, an early return, a cancelled
/// future or a panic — unless it was disarmed after the group's leader exited normally.
#[derive(Debug, Default)]
pub struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    /// Guards the group `pgid` (none: nothing to guard).
    pub fn new(pgid: Option<i32>) -> Self {
        GroupGuard { pgid }
    }

    /// Kills the group now (once).
    pub fn kill_now(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
        }
    }

    /// The guarded group.
    pub fn pgid(&self) -> Option<i32> {
        self.pgid
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// Resolves on SIGINT or SIGTERM (never, when the handlers cannot be installed).
pub async fn termination() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{block_of, find_in_path};

    #[test]
    fn environment_strings_end_to_end_make_one_block_in_any_order() {
        // "A=1\0" at 100, "BB=22\0" at 104, "C=3\0" at 110, listed out of order.
        let spans = [104..110, 100..104, 110..114];
        assert_eq!(block_of(spans.into_iter()), Some(100..114));
        assert_eq!(block_of(std::iter::once(7..9)), Some(7..9));
    }

    #[test]
    fn a_gap_an_overlap_or_no_entry_is_no_block() {
        // An entry elsewhere (a preloaded library's putenv) leaves a gap: never written to.
        assert_eq!(block_of([100..104, 104..110, 9000..9008].into_iter()), None);
        assert_eq!(block_of([100..106, 104..110].into_iter()), None);
        assert_eq!(block_of(std::iter::empty()), None);
    }
    use std::os::unix::fs::PermissionsExt;

    fn executable(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
        std::fs::create_dir_all(dir).expect("dir");
        let file = dir.join(name);
        std::fs::write(&file, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        file
    }

    #[test]
    fn a_program_in_a_refused_or_relative_entry_is_skipped_for_the_next_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tree = dir.path().join("tree");
        executable(&tree.join(".venv/bin"), "odek-prog");
        let safe = executable(&dir.path().join("safe"), "odek-prog");
        let path = std::env::join_paths([
            std::path::PathBuf::from("relative/bin"),
            tree.join(".venv/bin"),
            dir.path().join("safe"),
        ])
        .expect("join");
        let found = find_in_path("odek-prog", &path, std::slice::from_ref(&tree));
        let safe_dir = safe.parent().expect("parent").canonicalize().expect("real");
        assert_eq!(found, Some(safe_dir.join("odek-prog")));
    }

    #[test]
    fn a_link_into_a_refused_place_is_skipped_and_nothing_found_is_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tree = dir.path().join("tree");
        let fake = executable(&tree, "odek-prog");
        std::fs::create_dir_all(dir.path().join("bin")).expect("bin");
        std::os::unix::fs::symlink(&fake, dir.path().join("bin/odek-prog")).expect("link");
        let path = std::env::join_paths([dir.path().join("bin")]).expect("join");
        assert_eq!(find_in_path("odek-prog", &path, &[tree]), None);
    }
}
