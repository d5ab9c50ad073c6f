//! Processes: signals to the process groups odek starts (shell commands, MCP servers, and
//! later sub-agents), a guard that kills a group however its owner ends, and the
//! termination signals every long-running command stops on.

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
