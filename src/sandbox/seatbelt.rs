//! The Seatbelt profile of the rule set: text in Apple's Sandbox Profile Language (SBPL)
//! that `/usr/bin/sandbox-exec -p PROFILE -- sh -c COMMAND` applies on macOS.
//!
//! The profile denies by default and allows what a shell and the usual tools need to run at
//! all (starting programs, reading sysctls, looking up the few system services that name
//! lookups, logging and TLS go through, POSIX shared memory, pseudo-terminals); then, from
//! the rule set: reads everywhere (as on Linux, reading credentials is the classifier's
//! `secret_read`), writes beneath the writable places and to the device nodes, the
//! protected paths denied again (a later rule wins over an earlier one, so they stay out of
//! reach even beneath a writable place, and the folders that hold them cannot be moved
//! away), and the network as the rule set says — with `none`, local (Unix) sockets only.
//!
//! The text is generated and unit-tested on every platform; only macOS runs it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::Network;
use super::rules::Rules;

/// The program that applies a profile and runs a command under it.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// The system services any shell command may look up (user and group names, the per-user
/// folders, logging, power assertions of long builds).
const SYSTEM_SERVICES: &[&str] = &[
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.opendirectoryd.membership",
    "com.apple.bsd.dirhelper",
    "com.apple.system.logger",
    "com.apple.logd",
    "com.apple.PowerManagement.control",
];

/// The services name resolution and TLS go through, for commands that may use the network.
const NETWORK_SERVICES: &[&str] = &[
    "com.apple.SystemConfiguration.configd",
    "com.apple.SystemConfiguration.DNSConfiguration",
    "com.apple.networkd",
    "com.apple.SecurityServer",
    "com.apple.trustd.agent",
    "com.apple.ocspd",
];

/// The fixed part before the rule set's own rules.
const BASE: &str = r#"(version 1)
; odek's sandbox for shell commands, generated from its rule set (src/sandbox/rules.rs).
(deny default)

; Programs: run and start them; signal and inspect only what runs in this sandbox.
(allow process-exec process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow mach-priv-task-port (target same-sandbox))

; What a shell and the usual tools need from the system.
(allow sysctl-read)
(allow user-preference-read)
(allow ipc-posix-shm ipc-posix-sem)
(allow iokit-open (iokit-registry-entry-class "RootDomainUserClient"))
"#;

/// A profile path could not be written into a profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// SBPL strings are text: a path that is not UTF-8 cannot be named.
    #[error(
        "the path {} is not UTF-8, so the Seatbelt profile cannot name it (rename it, or remove it from sandbox_allow_write)",
        .0.display()
    )]
    NotUtf8(PathBuf),
}

impl crate::error::Classified for ProfileError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }

    fn hint(&self) -> Option<&'static str> {
        Some(
            "Seatbelt names paths as text: rename the folder, or leave it out of sandbox_allow_write",
        )
    }
}

/// The Seatbelt profile of `rules`.
pub fn profile(rules: &Rules) -> Result<String, ProfileError> {
    let mut text = String::from(BASE);
    push_services(&mut text, SYSTEM_SERVICES);
    text.push_str("\n; Reading: everywhere, as on Linux.\n(allow file-read*)\n");
    text.push_str("\n; Writing: beneath the working tree, $TMPDIR and sandbox_allow_write only.\n");
    push_filter(&mut text, "(allow file-write*", "subpath", rules.writable())?;
    text.push_str("\n; The device nodes a shell writes to, and pseudo-terminals.\n");
    push_filter(
        &mut text,
        "(allow file-read* file-write* file-ioctl",
        "subpath",
        rules.devices(),
    )?;
    text.push_str(concat!(
        "(allow file-read* file-write* file-ioctl (subpath \"/dev/fd\"))\n",
        "(allow pseudo-tty)\n",
        "(allow file-read* file-write* file-ioctl (regex #\"^/dev/ttys[0-9]+$\"))\n",
    ));
    push_protected(&mut text, rules.protected())?;
    push_network(&mut text, rules.network());
    Ok(text)
}

/// The protected paths, denied after the allows so that they win even beneath a writable
/// place, and the folders above them, which may not be moved or removed (moving one would
/// carry a protected path to where it may be written).
fn push_protected(text: &mut String, protected: &[PathBuf]) -> Result<(), ProfileError> {
    if protected.is_empty() {
        return Ok(());
    }
    text.push_str("\n; Out of reach even beneath a writable place: odek's home and its configuration (with the keys).\n");
    push_filter(text, "(deny file-write*", "subpath", protected)?;
    let mut above: Vec<PathBuf> = Vec::new();
    for path in protected {
        for ancestor in path.ancestors().skip(1) {
            if !above.iter().any(|known| known == ancestor) {
                above.push(ancestor.to_path_buf());
            }
        }
    }
    push_filter(text, "(deny file-write-unlink", "literal", &above)
}

/// The network rules: everything, or local (Unix) sockets only.
fn push_network(text: &mut String, network: Network) {
    match network {
        Network::Allow => {
            text.push_str("\n; Network: allowed (sandbox_network \"allow\").\n(allow network*)\n(allow system-socket)\n");
            push_services(text, NETWORK_SERVICES);
        }
        Network::None => text.push_str(concat!(
            "\n; Network: local (Unix) sockets only (sandbox_network \"none\").\n",
            "(allow system-socket (socket-domain AF_UNIX))\n",
            "(allow network-bind network-inbound (local unix-socket))\n",
            "(allow network-outbound (remote unix-socket))\n",
        )),
    }
}

fn push_services(text: &mut String, services: &[&str]) {
    text.push_str("(allow mach-lookup");
    for service in services {
        let _ = write!(text, "\n  (global-name {})", quoted(service));
    }
    text.push_str(")\n");
}

/// `(OPERATION (FILTER "path") …)`, one path a line; nothing when `paths` is empty (an
/// allow without a filter would allow everything).
fn push_filter(
    text: &mut String,
    operation: &str,
    filter: &str,
    paths: &[PathBuf],
) -> Result<(), ProfileError> {
    if paths.is_empty() {
        return Ok(());
    }
    text.push_str(operation);
    for path in paths {
        let _ = write!(text, "\n  ({filter} {})", path_literal(path)?);
    }
    text.push_str(")\n");
    Ok(())
}

/// `path` as an SBPL string literal.
fn path_literal(path: &Path) -> Result<String, ProfileError> {
    let text = path
        .to_str()
        .ok_or_else(|| ProfileError::NotUtf8(path.to_path_buf()))?;
    Ok(quoted(text))
}

/// `text` between double quotes, its `"` and `\` escaped with a backslash (every other
/// character stands for itself in an SBPL string).
pub fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Arranges for `program` to run under the profile of `rules`: `sandbox-exec -p PROFILE --
/// program`, the caller adding the program's own arguments.
#[cfg(target_os = "macos")]
pub(super) fn command(
    rules: &Rules,
    program: &Path,
) -> Result<tokio::process::Command, ProfileError> {
    let mut command = tokio::process::Command::new(SANDBOX_EXEC);
    command
        .arg("-p")
        .arg(profile(rules)?)
        .arg("--")
        .arg(program);
    Ok(command)
}

#[cfg(test)]
mod tests;
