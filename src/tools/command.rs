//! How odek starts a shell command, for `shell` and its background jobs alike.

use std::process::Stdio;

use super::ToolError;
use crate::sandbox::{Sandbox, SandboxError};

/// Starts `sh -c command` in `cwd` (the `sh` resolved once at start, never one from a place
/// commands may write), in its own process group, stdin empty, without odek's
/// keys, in `sandbox` when given (a sandbox that is required and missing refuses it);
/// `outputs` says where its output goes.
pub(super) fn spawn(
    command: &str,
    cwd: &std::path::Path,
    sandbox: Option<&Sandbox>,
    outputs: impl FnOnce(&mut tokio::process::Command) -> std::io::Result<()>,
) -> Result<tokio::process::Child, ToolError> {
    let sh = crate::process_group::trusted_program(crate::process_group::TrustedProgram::Sh)
        .ok_or_else(|| {
            ToolError(
                "shell: no sh was found on PATH outside the places shell commands may write, so the command was not run".into(),
            )
        })?;
    let mut cmd = crate::sandbox::command(&sh, sandbox).map_err(|e| match e {
        SandboxError::Required(_) => ToolError(format!("shell: {e}. The command was not run.")),
        _ => ToolError(format!(
            "shell: the sandbox could not be prepared ({e}), so the command was not run; the user can run odek with --no-sandbox"
        )),
    })?;
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    outputs(&mut cmd).map_err(|e| ToolError(format!("shell: could not start sh: {e}")))?;
    crate::process_group::hide_keys(&mut cmd);
    cmd.spawn().map_err(|e| match sandbox {
        Some(_) => ToolError(format!(
            "shell: the sandbox could not be applied ({e}), so the command was not run; the user can run odek with --no-sandbox"
        )),
        None => ToolError(format!("shell: could not start sh: {e}")),
    })
}
