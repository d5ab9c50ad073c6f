//! The program's exit codes.

use std::process::ExitCode;

/// Exit codes of the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The task completed.
    Success = 0,
    /// A run or setup error.
    Failure = 1,
    /// Bad command-line usage.
    Usage = 2,
    /// An execution budget ran out.
    Budget = 4,
    /// `odek upgrade --check`: a newer release exists.
    UpdateAvailable = 10,
    /// Interrupted by Ctrl-C.
    Interrupted = 130,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}
