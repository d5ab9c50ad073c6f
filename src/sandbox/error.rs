//! Why a command cannot be put in the sandbox: no sandbox on this system ([`Unavailable`],
//! and the test seam that simulates that), or the backend's rule set could not be built
//! ([`SandboxError`]).

use super::seatbelt;

/// The variable that makes odek behave as on a machine without a sandbox: a test seam (the
/// integration tests run on kernels that have Landlock). It weakens nothing `ODEK_SANDBOX`
/// cannot, says so in its warning, and with `sandbox_required` makes commands refuse.
pub const SIMULATE_UNAVAILABLE_VAR: &str = "ODEK_TEST_SANDBOX_UNAVAILABLE";

/// Why no sandbox is available here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// Landlock compiled in, switched off.
    #[error("Landlock is built into this kernel but not enabled")]
    LandlockDisabled,
    /// Not in this kernel.
    #[error("this kernel has no Landlock")]
    LandlockMissing,
    /// macOS without its sandbox program.
    #[error("{} is missing", seatbelt::SANDBOX_EXEC)]
    NoSandboxExec,
    /// Neither Linux nor macOS.
    #[error(
        "odek has no sandbox for this system (it uses Landlock on Linux and Seatbelt on macOS)"
    )]
    Unsupported,
    /// [`SIMULATE_UNAVAILABLE_VAR`] is set.
    #[error("{SIMULATE_UNAVAILABLE_VAR} is set (a test seam that makes the sandbox unavailable)")]
    Simulated,
}

impl crate::error::Classified for Unavailable {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }

    fn hint(&self) -> Option<&'static str> {
        Some(self.remedy())
    }
}

impl Unavailable {
    /// What would make the sandbox available.
    pub fn remedy(self) -> &'static str {
        match self {
            Unavailable::LandlockDisabled => {
                "enable Landlock (add landlock to the kernel's lsm= boot parameter)"
            }
            Unavailable::LandlockMissing => "use a Linux kernel 5.13 or newer with Landlock",
            Unavailable::NoSandboxExec => "restore macOS's /usr/bin/sandbox-exec",
            Unavailable::Unsupported => "run odek on Linux or macOS",
            Unavailable::Simulated => "unset ODEK_TEST_SANDBOX_UNAVAILABLE",
        }
    }
}

/// A command could not be put in the sandbox: it does not run.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The sandbox is required and this system offers none.
    #[error(
        "the sandbox is required (sandbox_required) but not available here: {0}; shell commands never run without it while sandbox_required is on: the user can {remedy} or turn sandbox_required off",
        remedy = .0.remedy()
    )]
    Required(Unavailable),
    /// The Landlock ruleset could not be built.
    #[cfg(target_os = "linux")]
    #[error("the Landlock ruleset could not be built: {0}")]
    Landlock(#[from] ::landlock::RulesetError),
    /// The Seatbelt profile could not be written.
    #[error(transparent)]
    Profile(#[from] seatbelt::ProfileError),
}

impl crate::error::Classified for SandboxError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            SandboxError::Required(_) => Some("docs/SANDBOX.md says what each system needs"),
            SandboxError::Profile(e) => crate::error::Classified::hint(e),
            #[cfg(target_os = "linux")]
            SandboxError::Landlock(_) => None,
        }
    }
}
