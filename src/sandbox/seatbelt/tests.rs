//! The generated Seatbelt profile: its whole text (a snapshot) and each rule on its own.

use std::path::{Path, PathBuf};

use super::*;

/// Runs a snapshot assertion with the snapshots stored in `src/sandbox/snapshots/`.
macro_rules! snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!($name, $value);
        })
    };
}

/// A Mac user's rules: a project, the per-user `$TMPDIR`, a cache entry; the odek home.
fn rules(network: Network) -> Rules {
    Rules::new(
        [
            PathBuf::from("/Users/ana/project"),
            PathBuf::from("/private/var/folders/xy/abc/T"),
            PathBuf::from("/Users/ana/.cargo"),
        ],
        [PathBuf::from("/Users/ana/.odek")],
        network,
    )
}

fn profile_of(rules: &Rules) -> String {
    profile(rules).expect("a profile")
}

/// The rule (an s-expression) that starts with `head`, as written.
fn rule<'a>(profile: &'a str, head: &str) -> &'a str {
    let start = profile
        .find(head)
        .unwrap_or_else(|| panic!("no rule {head} in\n{profile}"));
    let mut depth = 0;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in profile[start..].char_indices() {
        match (c, in_string, escaped) {
            (_, true, true) => escaped = false,
            ('\\', true, false) => escaped = true,
            ('"', _, false) => in_string = !in_string,
            ('(', false, _) => depth += 1,
            (')', false, _) => {
                depth -= 1;
                if depth == 0 {
                    return &profile[start..=start + i];
                }
            }
            _ => {}
        }
    }
    panic!("rule {head} is not closed in\n{profile}")
}

/// Every rule starting with `head`.
fn rules_starting<'a>(profile: &'a str, head: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = profile[from..].find(head) {
        let found = rule(&profile[from + at..], head);
        out.push(found);
        from += at + found.len();
    }
    out
}

#[test]
fn the_profile_text() {
    snapshot!(
        "seatbelt_profile_network_allow",
        profile_of(&rules(Network::Allow))
    );
    snapshot!(
        "seatbelt_profile_network_none",
        profile_of(&rules(Network::None))
    );
}

#[test]
fn it_denies_by_default_and_reads_everywhere() {
    let profile = profile_of(&rules(Network::Allow));
    assert!(profile.starts_with("(version 1)\n"), "{profile}");
    assert!(profile.contains("\n(deny default)\n"), "{profile}");
    assert!(profile.contains("\n(allow file-read*)\n"), "{profile}");
    assert!(!profile.contains("(allow default)"), "{profile}");
    assert!(
        profile.contains("(allow process-exec process-fork)"),
        "{profile}"
    );
}

#[test]
fn each_writable_place_is_a_subpath_of_the_one_write_rule() {
    let profile = profile_of(&rules(Network::Allow));
    let writes = rules_starting(&profile, "(allow file-write*");
    assert_eq!(writes.len(), 1, "{profile}");
    assert_eq!(
        writes[0],
        "(allow file-write*\n  (subpath \"/Users/ana/project\")\n  (subpath \"/private/var/folders/xy/abc/T\")\n  (subpath \"/Users/ana/.cargo\"))"
    );
    assert!(
        !profile.contains("(subpath \"/Users/ana\")"),
        "the home is not writable: {profile}"
    );
}

#[test]
fn no_writable_place_means_no_write_rule_rather_than_one_without_a_filter() {
    let profile = profile_of(&Rules::new([], [], Network::Allow));
    assert!(!profile.contains("(allow file-write*\n"), "{profile}");
    assert!(!profile.contains("(allow file-write*)"), "{profile}");
    assert!(!profile.contains("(deny file-write*"), "{profile}");
}

#[test]
fn the_device_nodes_are_writable_and_pseudo_terminals_open() {
    let profile = profile_of(&rules(Network::None));
    let devices = rule(&profile, "(allow file-read* file-write* file-ioctl\n");
    for device in crate::sandbox::rules::DEVICES {
        assert!(
            devices.contains(&format!("(subpath \"{device}\")")),
            "{device} missing from {devices}"
        );
    }
    assert!(profile.contains("(allow pseudo-tty)"), "{profile}");
    assert!(
        profile.contains("(regex #\"^/dev/ttys[0-9]+$\")"),
        "{profile}"
    );
    assert!(profile.contains("(subpath \"/dev/fd\")"), "{profile}");
}

#[test]
fn the_odek_home_is_denied_after_the_writes_so_it_wins_beneath_a_writable_place() {
    let rules = Rules::new(
        [PathBuf::from("/Users/ana")],
        [PathBuf::from("/Users/ana/.odek")],
        Network::Allow,
    );
    let profile = profile_of(&rules);
    let allow = profile.find("(allow file-write*").expect("the write rule");
    let deny_at = profile.find("(deny file-write*").expect("the deny rule");
    assert!(
        deny_at > allow,
        "the deny must come later to win:\n{profile}"
    );
    assert_eq!(
        rule(&profile, "(deny file-write*"),
        "(deny file-write*\n  (subpath \"/Users/ana/.odek\"))"
    );
    let unlink = rule(&profile, "(deny file-write-unlink");
    for folder in ["/Users/ana", "/Users", "/"] {
        assert!(
            unlink.contains(&format!("(literal \"{folder}\")")),
            "{folder} may be moved away: {unlink}"
        );
    }
    assert!(
        !unlink.contains("(literal \"/Users/ana/.odek\")"),
        "the home itself is covered by the subpath deny: {unlink}"
    );
}

#[test]
fn network_allow_opens_sockets_and_the_lookup_services() {
    let profile = profile_of(&rules(Network::Allow));
    assert!(profile.contains("\n(allow network*)\n"), "{profile}");
    assert!(profile.contains("\n(allow system-socket)\n"), "{profile}");
    for service in NETWORK_SERVICES {
        assert!(profile.contains(&quoted(service)), "{service}: {profile}");
    }
    assert!(!profile.contains("unix-socket"), "{profile}");
}

#[test]
fn network_none_allows_local_sockets_only() {
    let profile = profile_of(&rules(Network::None));
    assert!(!profile.contains("(allow network*)"), "{profile}");
    assert!(!profile.contains("(allow system-socket)"), "{profile}");
    assert!(
        !profile.contains("com.apple.trustd.agent"),
        "no TLS service without the network: {profile}"
    );
    let network: Vec<&str> = rules_starting(&profile, "(allow network")
        .into_iter()
        .chain(rules_starting(&profile, "(allow system-socket"))
        .collect();
    assert_eq!(network.len(), 3, "{profile}");
    for rule in network {
        assert!(
            rule.contains("unix-socket") || rule.contains("AF_UNIX"),
            "{rule} reaches beyond local sockets"
        );
    }
}

#[test]
fn tmpdir_is_writable_under_its_real_path() {
    let tmp = crate::sandbox::rules::real_path(&std::env::temp_dir());
    let rules = Rules::for_commands(
        Path::new("/Users/ana/project"),
        &[],
        &[PathBuf::from("/Users/ana/.odek")],
        Network::Allow,
    );
    let profile = profile_of(&rules);
    let writes = rule(&profile, "(allow file-write*");
    assert!(
        writes.contains(&format!(
            "(subpath {})",
            quoted(tmp.to_str().expect("UTF-8"))
        )),
        "{writes}"
    );
}

#[test]
fn a_linked_folder_is_named_by_its_real_path_as_macos_tmp_is_private_tmp() {
    // The same shape as macOS's `/tmp -> private/tmp`, built where the test runs.
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("real");
    std::fs::create_dir_all(root.join("private/tmp")).expect("private/tmp");
    std::os::unix::fs::symlink("private/tmp", root.join("tmp")).expect("tmp link");
    let rules = Rules::new(
        [root.join("tmp"), root.join("tmp/not-yet")],
        [],
        Network::Allow,
    );
    let profile = profile_of(&rules);
    let writes = rule(&profile, "(allow file-write*");
    let real = root.join("private/tmp");
    for path in [real.clone(), real.join("not-yet")] {
        let shown = quoted(path.to_str().expect("UTF-8"));
        assert!(writes.contains(&format!("(subpath {shown})")), "{writes}");
    }
    let linked = quoted(root.join("tmp").to_str().expect("UTF-8"));
    assert!(!writes.contains(&format!("(subpath {linked})")), "{writes}");
}

#[test]
fn quotes_and_backslashes_in_a_path_are_escaped() {
    assert_eq!(quoted(r#"/a "b"\c"#), r#""/a \"b\"\\c""#);
    let rules = Rules::new(
        [PathBuf::from(r#"/Users/ana/we"ird\dir) (allow default"#)],
        [],
        Network::Allow,
    );
    let profile = profile_of(&rules);
    assert!(
        profile.contains(r#"(subpath "/Users/ana/we\"ird\\dir) (allow default")"#),
        "{profile}"
    );
    // Read back as SBPL reads it, the rule holds the one path and nothing else.
    let writes = rule(&profile, "(allow file-write*");
    assert_eq!(writes.matches("(subpath ").count(), 1, "{writes}");
    assert!(!profile.contains("\n(allow default"), "{profile}");
}

#[test]
fn a_path_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/Users/ana/\xff"));
    let rules = Rules::new([odd.clone()], [], Network::Allow);
    assert_eq!(profile(&rules), Err(ProfileError::NotUtf8(odd)));
}
