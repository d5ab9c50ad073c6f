//! The Landlock ruleset of the rule set (Linux 5.13+): reads everywhere, every access
//! beneath the writable places and device nodes, TCP connect and bind refused with
//! `Network::None` (ABI 4+). Landlock only grants: a protected path beneath a writable
//! place stays writable (odek warns of it at start).

use std::path::Path;

use ::landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetError, RulesetStatus, path_beneath_rules,
};

use super::Network;
use super::rules::Rules;

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`: the ABI version.
pub(super) fn abi() -> Result<i32, super::Unavailable> {
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
        Some(libc::EOPNOTSUPP) => super::Unavailable::LandlockDisabled,
        _ => super::Unavailable::LandlockMissing,
    })
}

/// The paths the ruleset grants every access beneath: the writable places, then the
/// device nodes.
pub(super) fn granted(rules: &Rules) -> impl Iterator<Item = &Path> {
    rules
        .writable()
        .iter()
        .chain(rules.devices())
        .map(|path| path.as_path())
}

/// The ruleset of `rules` for ABI `abi`, created and filled, ready for `restrict_self`.
pub(super) fn ruleset(rules: &Rules, abi: i32) -> Result<RulesetCreated, RulesetError> {
    let abi = ABI::from(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))?;
    if rules.network() == Network::None {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    ruleset
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules(granted(rules), AccessFs::from_all(abi)))
}

/// What a ruleset of ABI `abi` cannot enforce of `rules`, one warning line each: TCP before
/// ABI 4, and a protected path beneath a writable place (Landlock only grants).
pub(super) fn shortfalls(rules: &Rules, abi: i32) -> Vec<String> {
    let mut lines = Vec::new();
    if rules.network() == Network::None && abi < 4 {
        lines.push(format!(
            "odek: warning: this kernel's Landlock (ABI {abi}) cannot refuse TCP; sandbox_network \"none\" is not enforced"
        ));
    }
    for path in rules.protected_beneath_writable() {
        lines.push(format!(
            "odek: warning: shell commands may write to {} (where odek keeps its configuration) even in the sandbox: it lies under a writable directory",
            path.display()
        ));
    }
    lines
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

/// `program` in a command whose child applies the ruleset of `rules` just before `exec`.
pub(super) fn command(
    rules: &Rules,
    abi: i32,
    program: &Path,
) -> Result<tokio::process::Command, RulesetError> {
    let mut ruleset = Some(ruleset(rules, abi)?);
    let mut command = tokio::process::Command::new(program);
    // SAFETY: the closure runs in the forked child before `exec`. It only moves the
    // prepared ruleset out of its slot and makes the two system calls of `restrict_self`
    // (`prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self`); its error is a plain
    // errno, so nothing is allocated.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || restrict(ruleset.take()));
    }
    Ok(command)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn the_ruleset_grants_exactly_the_rule_sets_writable_places_and_devices() {
        let rules = Rules::new(
            [PathBuf::from("/work/p"), PathBuf::from("/opt/cache")],
            [PathBuf::from("/work/p/.odek")],
            Network::None,
        );
        let granted: Vec<&Path> = granted(&rules).collect();
        let expected: Vec<&Path> = rules
            .writable()
            .iter()
            .chain(rules.devices())
            .map(PathBuf::as_path)
            .collect();
        assert_eq!(granted, expected);
        assert!(
            !granted.contains(&Path::new("/work/p/.odek")),
            "Landlock cannot deny beneath a grant; a protected path is never granted either"
        );
    }

    #[test]
    fn the_same_rules_give_the_landlock_grants_and_the_seatbelt_write_rule() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rules = Rules::for_commands(
            dir.path(),
            &["~/.cargo".into()],
            &[dir.path().join(".odek")],
            Network::Allow,
        );
        let profile = super::super::seatbelt::profile(&rules).expect("profile");
        for path in granted(&rules) {
            let shown = super::super::seatbelt::quoted(path.to_str().expect("UTF-8"));
            assert!(
                profile.contains(&format!("(subpath {shown})")),
                "{shown} in\n{profile}"
            );
        }
        assert_eq!(
            granted(&rules).count(),
            rules.writable().len() + rules.devices().len()
        );
    }

    #[test]
    fn the_ruleset_is_built_where_the_kernel_has_landlock() {
        let Ok(abi) = abi() else {
            eprintln!("no Landlock on this kernel: nothing to build");
            return;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let rules =
            Rules::for_commands(dir.path(), &[], &[dir.path().join(".odek")], Network::None);
        assert!(ruleset(&rules, abi).is_ok());
    }
}
