//! The sandbox under the classifier: shell commands (their background jobs and a project's
//! hooks too) run confined by the kernel — reading everywhere, writing only beneath the
//! working directory, `$TMPDIR` as odek sees it, the `/dev` nodes shells need and the
//! configured `sandbox_allow_write` paths; not the home directory, so a command cannot
//! rewrite the configuration that governs it. With `sandbox_network: "none"` the network is
//! shut too.
//!
//! One rule set ([`Rules`], `rules.rs`) is built in odek for each process and turned into
//! the backend of the platform for each command: a Landlock ruleset on Linux 5.13+
//! (`landlock.rs`, applied in the child between `fork` and `exec`) or a Seatbelt profile on
//! macOS (`seatbelt.rs`, run through `/usr/bin/sandbox-exec`). odek itself stays
//! unrestricted. The file tools (`read_file`, `write_file`, `patch`, `search_files`) are not
//! sandboxed: they have their own confinement.
//!
//! Where no backend is available, odek says so once; with `sandbox_required` it then
//! refuses to run shell commands instead of running them unsandboxed.

mod error;
#[cfg(target_os = "linux")]
mod landlock;
pub mod rules;
pub mod seatbelt;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use error::{SIMULATE_UNAVAILABLE_VAR, SandboxError, Unavailable};
pub(crate) use rules::expand_home;
pub use rules::{Network, Rules, real_path, writable_places};

/// What the configuration asks of the sandbox, as plain values.
#[derive(Clone, Copy, Debug)]
pub struct Wanted<'a> {
    /// `sandbox`: run shell commands sandboxed.
    pub on: bool,
    /// `sandbox_required`: where no sandbox is available, run no shell command at all.
    pub required: bool,
    /// The working directory of the commands.
    pub cwd: &'a Path,
    /// `sandbox_allow_write` (entries may start with `~/`).
    pub allow_write: &'a [String],
    /// `sandbox_network`.
    pub network: Network,
    /// Kept out of reach even beneath a writable place: odek's home and its configuration
    /// file.
    pub protected: &'a [PathBuf],
}

/// The sandbox one process's shell commands run in: the rule set and the platform's backend.
#[derive(Clone, Debug)]
pub struct Sandbox {
    rules: Rules,
    backend: Backend,
}

/// How the rule set is enforced here.
#[derive(Clone, Debug)]
enum Backend {
    /// A Landlock ruleset of this ABI version, applied before `exec`.
    #[cfg(target_os = "linux")]
    Landlock { abi: i32 },
    /// A Seatbelt profile, applied by `sandbox-exec`.
    #[cfg(target_os = "macos")]
    Seatbelt,
    /// None is available and the sandbox is required: every command is refused.
    Refuse(Unavailable),
}

/// Whether the sandbox is in force, and why not.
#[derive(Clone, Debug)]
pub enum SandboxStatus {
    /// Shell commands run sandboxed.
    On(Arc<Sandbox>),
    /// Turned off by `sandbox: false` or `--no-sandbox`.
    Off,
    /// Wanted, but this system offers none: commands run without it.
    Unavailable(Unavailable),
    /// Wanted and required (`sandbox_required`), but this system offers none: shell
    /// commands are refused (the sandbox's commands fail with [`SandboxError::Required`]).
    Refusing(Arc<Sandbox>),
}

impl SandboxStatus {
    /// The sandbox `wanted` asks for, here. `warnings` gets one line for what the sandbox
    /// cannot do on this system: none at all, TCP on an old Landlock, a protected path it
    /// leaves writable.
    pub fn new(wanted: Wanted<'_>, warnings: &mut Vec<String>) -> SandboxStatus {
        if !wanted.on {
            return SandboxStatus::Off;
        }
        let rules = Rules::for_commands(
            wanted.cwd,
            wanted.allow_write,
            wanted.protected,
            wanted.network,
        );
        let backend = match backend_here() {
            Ok(backend) => backend,
            Err(missing) if wanted.required => {
                warnings.push(format!(
                    "odek: warning: {missing}, so shell commands will not run: sandbox_required is set (to run them without the sandbox, turn sandbox_required off)"
                ));
                return SandboxStatus::Refusing(Arc::new(Sandbox {
                    rules,
                    backend: Backend::Refuse(missing),
                }));
            }
            Err(missing) => {
                warnings.push(format!(
                    "odek: warning: {missing}, so shell commands run without the sandbox (only the approval policy guards them)"
                ));
                return SandboxStatus::Unavailable(missing);
            }
        };
        let sandbox = Sandbox { rules, backend };
        warnings.extend(sandbox.shortfalls());
        SandboxStatus::On(Arc::new(sandbox))
    }

    /// True when shell commands run sandboxed.
    pub fn is_on(&self) -> bool {
        matches!(self, SandboxStatus::On(_))
    }

    /// True when no shell command runs outside the sandbox: it is on, or required and
    /// commands are refused. What a session records, and what its sub-agents inherit.
    pub fn confines_commands(&self) -> bool {
        matches!(self, SandboxStatus::On(_) | SandboxStatus::Refusing(_))
    }

    /// The sandbox shell commands are started through: when on, and when commands are
    /// refused (it then refuses each of them).
    pub fn sandbox(&self) -> Option<Arc<Sandbox>> {
        match self {
            SandboxStatus::On(sandbox) | SandboxStatus::Refusing(sandbox) => Some(sandbox.clone()),
            SandboxStatus::Off | SandboxStatus::Unavailable(_) => None,
        }
    }

    /// One line for `odek config`: on (and how), off, or unavailable (why, and what then).
    pub fn describe(&self) -> String {
        match self {
            SandboxStatus::On(sandbox) => format!("on ({})", sandbox.backend_name()),
            SandboxStatus::Off => "off (sandbox is false)".into(),
            SandboxStatus::Unavailable(why) => format!(
                "unavailable: {why}; shell commands run without it (sandbox_required would refuse them)"
            ),
            SandboxStatus::Refusing(sandbox) => match &sandbox.backend {
                Backend::Refuse(why) => {
                    format!("unavailable: {why}; shell commands are refused (sandbox_required)")
                }
                _ => "unavailable; shell commands are refused (sandbox_required)".into(),
            },
        }
    }
}

/// The backend this system offers, or why there is none.
fn backend_here() -> Result<Backend, Unavailable> {
    if std::env::var_os(SIMULATE_UNAVAILABLE_VAR).is_some_and(|v| !v.is_empty()) {
        return Err(Unavailable::Simulated);
    }
    #[cfg(target_os = "linux")]
    {
        landlock::abi().map(|abi| Backend::Landlock { abi })
    }
    #[cfg(target_os = "macos")]
    {
        if Path::new(seatbelt::SANDBOX_EXEC).is_file() {
            Ok(Backend::Seatbelt)
        } else {
            Err(Unavailable::NoSandboxExec)
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        Err(Unavailable::Unsupported)
    }
}

/// `program` as a command, in `sandbox` when given: the caller adds its arguments, its
/// folder and its streams. An error means the command must not run.
pub fn command(
    program: &Path,
    sandbox: Option<&Sandbox>,
) -> Result<tokio::process::Command, SandboxError> {
    match sandbox {
        Some(sandbox) => sandbox.command(program),
        None => Ok(tokio::process::Command::new(program)),
    }
}

impl Sandbox {
    /// The rule set.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// `program` as a command that runs inside the sandbox (on Linux the ruleset is built
    /// here and applied in the child just before `exec`; on macOS `sandbox-exec` applies
    /// the profile). An error means the command must not run.
    pub fn command(&self, program: &Path) -> Result<tokio::process::Command, SandboxError> {
        match &self.backend {
            #[cfg(target_os = "linux")]
            Backend::Landlock { abi } => Ok(landlock::command(&self.rules, *abi, program)?),
            #[cfg(target_os = "macos")]
            Backend::Seatbelt => Ok(seatbelt::command(&self.rules, program)?),
            Backend::Refuse(why) => Err(SandboxError::Required(*why)),
        }
    }

    /// The backend's name, for `odek config`.
    fn backend_name(&self) -> String {
        match &self.backend {
            #[cfg(target_os = "linux")]
            Backend::Landlock { abi } => format!("Landlock ABI {abi}"),
            #[cfg(target_os = "macos")]
            Backend::Seatbelt => format!("Seatbelt, {}", seatbelt::SANDBOX_EXEC),
            Backend::Refuse(_) => "refusing".into(),
        }
    }

    /// What this backend cannot enforce of the rule set, one warning line each.
    fn shortfalls(&self) -> Vec<String> {
        #[cfg(target_os = "linux")]
        if let Backend::Landlock { abi } = self.backend {
            return landlock::shortfalls(&self.rules, abi);
        }
        // Seatbelt enforces the whole rule set.
        Vec::new()
    }

    /// A note for the model and the user when a sandboxed command failed for lack of
    /// permission: where it may write, and how to widen that.
    pub fn denial_note(&self) -> String {
        let places: Vec<String> = self
            .rules
            .writable()
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        let mut note = format!(
            "note: the command ran in odek's sandbox, which lets shell commands write only under {}",
            places.join(", ")
        );
        if self.rules.network() == Network::None {
            note.push_str(" and refuses TCP connections");
        }
        note.push_str(
            "; a write elsewhere fails with \"Permission denied\" (\"Operation not permitted\" on macOS). The user can add a path to sandbox_allow_write in the global config or run odek with --no-sandbox.",
        );
        note
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted<'a>(on: bool, required: bool, cwd: &'a Path, home: &'a [PathBuf]) -> Wanted<'a> {
        Wanted {
            on,
            required,
            cwd,
            allow_write: &[],
            network: Network::Allow,
            protected: home,
        }
    }

    #[test]
    fn off_when_not_wanted() {
        let mut warnings = Vec::new();
        let home = [PathBuf::from("/nonexistent/.odek")];
        let status = SandboxStatus::new(wanted(false, true, Path::new("."), &home), &mut warnings);
        assert!(matches!(status, SandboxStatus::Off));
        assert!(!status.confines_commands());
        assert!(status.sandbox().is_none());
        assert!(warnings.is_empty());
        assert_eq!(status.describe(), "off (sandbox is false)");
    }

    #[test]
    fn the_note_names_the_writable_places_but_not_the_devices() {
        let sandbox = Sandbox {
            rules: Rules::new([PathBuf::from("/work/p")], [], Network::None),
            backend: Backend::Refuse(Unavailable::Simulated),
        };
        let note = sandbox.denial_note();
        assert!(note.contains("/work/p"), "{note}");
        assert!(!note.contains("/dev/null"), "{note}");
        assert!(note.contains("refuses TCP"), "{note}");
        assert!(note.contains("--no-sandbox"), "{note}");
    }

    #[test]
    fn a_required_sandbox_that_is_missing_refuses_every_command() {
        let sandbox = Sandbox {
            rules: Rules::new([PathBuf::from("/work/p")], [], Network::Allow),
            backend: Backend::Refuse(Unavailable::LandlockMissing),
        };
        let status = SandboxStatus::Refusing(Arc::new(sandbox));
        assert!(!status.is_on());
        assert!(status.confines_commands());
        let sandbox = status
            .sandbox()
            .expect("commands go through the refusing sandbox");
        let err = sandbox
            .command(Path::new("/bin/sh"))
            .expect_err("no command may start");
        let text = err.to_string();
        assert!(text.contains("sandbox_required"), "{text}");
        assert!(text.contains("this kernel has no Landlock"), "{text}");
        assert!(text.contains("5.13"), "{text}");
        assert!(
            status.describe().contains("refused"),
            "{}",
            status.describe()
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_home_beneath_the_working_directory_is_warned_of_where_landlock_cannot_protect_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join(".odek");
        let sandbox = Sandbox {
            rules: Rules::for_commands(dir.path(), &[], &[home], Network::None),
            backend: Backend::Landlock { abi: 3 },
        };
        let lines = sandbox.shortfalls();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains("cannot refuse TCP"), "{lines:?}");
        assert!(lines[1].contains("even in the sandbox"), "{lines:?}");
    }
}
