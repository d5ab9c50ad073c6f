//! The sandbox under the classifier: shell commands run under a Landlock ruleset (Linux
//! 5.13+) that lets them read everywhere but write only beneath the working directory,
//! `$TMPDIR` as odek sees it, the `/dev` nodes shells need and the configured
//! `sandbox_allow_write` paths — not the home directory, so a command cannot rewrite the
//! configuration that governs it. With `sandbox_network: "none"` TCP connect and bind are
//! refused too (Landlock ABI 4+; UDP is not covered).
//!
//! The ruleset is built in odek for each command and applied in the child between `fork`
//! and `exec`, so odek itself stays unrestricted. The file tools (`read_file`,
//! `write_file`, `patch`, `search_files`) are not sandboxed: they have their own
//! confinement.

use std::path::{Path, PathBuf};

/// Device nodes a shell command may open for writing.
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// What a sandboxed command may do on the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// Connect and bind as usual.
    Allow,
    /// No TCP connect or bind.
    None,
}

/// The sandbox one process's shell commands run in.
#[derive(Clone, Debug)]
pub struct Sandbox {
    writable: Vec<PathBuf>,
    network: Network,
    abi: i32,
}

/// Whether the sandbox is in force, and why not.
#[derive(Clone, Debug)]
pub enum SandboxStatus {
    /// Shell commands run sandboxed.
    On(std::sync::Arc<Sandbox>),
    /// Turned off by `sandbox: false` or `--no-sandbox`.
    Off,
    /// Wanted, but the kernel does not offer it; the reason is the one warning line.
    Unavailable(String),
}

/// The folders shell commands run in `cwd` may write beneath (the device nodes aside): the
/// working directory, `$TMPDIR` as odek sees it and the `allow_write` entries (`~/` expanded).
/// What lies there is the model's to change, so odek runs no program of its own from there.
pub fn writable_places(cwd: &Path, allow_write: &[String]) -> Vec<PathBuf> {
    let home = crate::home::user_home();
    let mut writable = vec![canonical(cwd), canonical(&std::env::temp_dir())];
    writable.extend(
        allow_write
            .iter()
            .map(|entry| expand_home(entry, home.as_deref())),
    );
    writable
}

impl SandboxStatus {
    /// Builds the sandbox for commands run in `cwd`. `allow_write` entries may start with
    /// `~/`. `warnings` gets a line for anything the sandbox cannot do here.
    pub fn new(
        wanted: bool,
        cwd: &Path,
        allow_write: &[String],
        network: Network,
        warnings: &mut Vec<String>,
    ) -> SandboxStatus {
        if !wanted {
            return SandboxStatus::Off;
        }
        let abi = match landlock_abi() {
            Ok(abi) => abi,
            Err(missing) => {
                return SandboxStatus::Unavailable(format!(
                    "odek: warning: {missing}, so shell commands run without the sandbox (only the approval policy guards them)"
                ));
            }
        };
        if network == Network::None && abi < 4 {
            warnings.push(format!(
                "odek: warning: this kernel's Landlock (ABI {abi}) cannot refuse TCP; sandbox_network \"none\" is not enforced"
            ));
        }
        let mut writable = writable_places(cwd, allow_write);
        writable.extend(WRITABLE_DEVICES.iter().map(PathBuf::from));
        SandboxStatus::On(std::sync::Arc::new(Sandbox {
            writable,
            network,
            abi,
        }))
    }

    /// True when shell commands run sandboxed.
    pub fn is_on(&self) -> bool {
        matches!(self, SandboxStatus::On(_))
    }

    /// The sandbox, when on.
    pub fn sandbox(&self) -> Option<std::sync::Arc<Sandbox>> {
        match self {
            SandboxStatus::On(sandbox) => Some(sandbox.clone()),
            _ => None,
        }
    }
}

impl Sandbox {
    /// The directories (and device files) commands may write beneath.
    pub fn writable(&self) -> &[PathBuf] {
        &self.writable
    }

    /// Arranges for `command` to run inside the sandbox: the ruleset is built here and
    /// applied in the child just before `exec`. An error means the sandbox could not be
    /// prepared; the command must then not run.
    #[cfg(target_os = "linux")]
    pub fn apply_to(&self, command: &mut tokio::process::Command) -> Result<(), SandboxError> {
        let mut ruleset = Some(linux::ruleset(self).map_err(|e| SandboxError(e.to_string()))?);
        // SAFETY: the closure runs in the forked child before `exec`. It only moves the
        // prepared ruleset out of its slot and makes the two system calls of
        // `restrict_self` (`prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self`); its
        // error is a plain errno, so nothing is allocated.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || linux::restrict(ruleset.take()));
        }
        Ok(())
    }

    /// Landlock is Linux-only: elsewhere the sandbox is never on.
    #[cfg(not(target_os = "linux"))]
    pub fn apply_to(&self, _command: &mut tokio::process::Command) -> Result<(), SandboxError> {
        Err(SandboxError("the sandbox needs Linux".into()))
    }

    /// A note for the model and the user when a sandboxed command failed for lack of
    /// permission: where it may write, and how to widen that.
    pub fn denial_note(&self) -> String {
        let places: Vec<String> = self
            .writable
            .iter()
            .filter(|path| !path.starts_with("/dev"))
            .map(|path| path.display().to_string())
            .collect();
        let mut note = format!(
            "note: the command ran in odek's sandbox, which lets shell commands write only under {}",
            places.join(", ")
        );
        if self.network == Network::None {
            note.push_str(" and refuses TCP connections");
        }
        note.push_str(
            "; a write elsewhere fails with \"Permission denied\". The user can add a path to sandbox_allow_write in the global config or run odek with --no-sandbox.",
        );
        note
    }
}

/// The sandbox's rules could not be prepared for a command (it then does not run).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SandboxError(String);

/// Why the kernel offers no Landlock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoLandlock {
    /// Compiled in, switched off.
    #[error("Landlock is built into this kernel but not enabled")]
    Disabled,
    /// Not in this kernel.
    #[error("this kernel has no Landlock")]
    Missing,
    /// Not Linux.
    #[error("the sandbox needs Linux's Landlock")]
    NotLinux,
}

/// The Landlock ABI version the kernel offers, or why there is none.
fn landlock_abi() -> Result<i32, NoLandlock> {
    #[cfg(target_os = "linux")]
    {
        linux::abi()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(NoLandlock::NotLinux)
    }
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// `entry` with a leading `~/` (or `~`) replaced by `home`, canonical where it exists.
pub(crate) fn expand_home(entry: &str, home: Option<&Path>) -> PathBuf {
    match (entry.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => canonical(&home.join(rest)),
        _ if entry == "~" => home.map_or_else(|| PathBuf::from(entry), canonical),
        _ => canonical(Path::new(entry)),
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
        RulesetCreated, RulesetCreatedAttr, RulesetError, RulesetStatus, path_beneath_rules,
    };

    use super::{Network, Sandbox};

    /// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`: the ABI version.
    pub(super) fn abi() -> Result<i32, super::NoLandlock> {
        const CREATE_RULESET_VERSION: libc::c_long = 1;
        // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the call only
        // returns a number; it reads and writes no memory.
        #[allow(unsafe_code)]
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                CREATE_RULESET_VERSION,
            )
        };
        if version >= 1 {
            return Ok(i32::try_from(version).unwrap_or(i32::MAX));
        }
        Err(match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EOPNOTSUPP) => super::NoLandlock::Disabled,
            _ => super::NoLandlock::Missing,
        })
    }

    /// The ruleset of `sandbox`, created and filled, ready for `restrict_self`.
    pub(super) fn ruleset(sandbox: &Sandbox) -> Result<RulesetCreated, RulesetError> {
        let abi = ABI::from(sandbox.abi);
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(abi))?;
        if sandbox.network == Network::None {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
        }
        ruleset
            .create()?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
            .add_rules(path_beneath_rules(
                &sandbox.writable,
                AccessFs::from_all(abi),
            ))
    }

    /// Applies the prepared ruleset to the calling (child) process.
    pub(super) fn restrict(ruleset: Option<RulesetCreated>) -> std::io::Result<()> {
        let denied = || std::io::Error::from_raw_os_error(libc::EPERM);
        let status = ruleset
            .ok_or_else(denied)?
            .restrict_self()
            .map_err(|_| denied())?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err(denied());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_when_not_wanted() {
        let mut warnings = Vec::new();
        let status = SandboxStatus::new(false, Path::new("."), &[], Network::Allow, &mut warnings);
        assert!(matches!(status, SandboxStatus::Off));
        assert!(warnings.is_empty());
    }

    #[test]
    fn home_entries_are_expanded() {
        let home = Path::new("/home/ana");
        assert_eq!(
            expand_home("~/.cargo", Some(home)),
            PathBuf::from("/home/ana/.cargo")
        );
        assert_eq!(expand_home("/opt/x", Some(home)), PathBuf::from("/opt/x"));
    }

    #[test]
    fn the_note_names_the_writable_places_but_not_the_devices() {
        let sandbox = Sandbox {
            writable: vec![PathBuf::from("/work/p"), PathBuf::from("/dev/null")],
            network: Network::None,
            abi: 4,
        };
        let note = sandbox.denial_note();
        assert!(note.contains("/work/p"), "{note}");
        assert!(!note.contains("/dev/null"), "{note}");
        assert!(note.contains("refuses TCP"), "{note}");
        assert!(note.contains("--no-sandbox"), "{note}");
    }
}
