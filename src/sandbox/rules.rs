//! The one rule set of the sandbox: the places shell commands may write beneath, the paths
//! that stay out of reach even beneath them (odek's home, with its configuration and keys),
//! the device nodes a shell writes to and the network. Both backends are generated from it:
//! the Landlock ruleset on Linux (`landlock.rs`) and the Seatbelt profile on macOS
//! (`seatbelt.rs`). Every path is kept as its real path (links resolved: macOS's `/tmp` is
//! `/private/tmp`), since both kernels check the path a file really has.

use std::path::{Path, PathBuf};

/// What a sandboxed command may do on the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// Connect and bind as usual.
    Allow,
    /// No TCP connect or bind (Linux, Landlock ABI 4+); only local sockets (macOS).
    None,
}

/// Device nodes a shell command may open for writing, Linux's and macOS's together (a node
/// a system lacks is skipped by Landlock and matches nothing in a Seatbelt profile).
pub const DEVICES: &[&str] = &[
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

/// What sandboxed shell commands may write and reach: the data both backends are built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    writable: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    devices: Vec<PathBuf>,
    network: Network,
}

impl Rules {
    /// The rules of commands run in `cwd`: writes beneath the working directory, `$TMPDIR`
    /// and the `allow_write` entries (`~/` expanded), never beneath the `protected` paths
    /// (odek's home and its configuration file, which may be a link to elsewhere).
    pub fn for_commands(
        cwd: &Path,
        allow_write: &[String],
        protected: &[PathBuf],
        network: Network,
    ) -> Rules {
        Rules::new(
            writable_places(cwd, allow_write),
            protected.iter().cloned(),
            network,
        )
    }

    /// Rules from explicit lists, each path taken as its real path (duplicates dropped, and
    /// a protected path beneath another); the device nodes are [`DEVICES`].
    pub fn new(
        writable: impl IntoIterator<Item = PathBuf>,
        protected: impl IntoIterator<Item = PathBuf>,
        network: Network,
    ) -> Rules {
        Rules {
            writable: real_paths(writable),
            protected: outermost(real_paths(protected)),
            devices: DEVICES.iter().map(PathBuf::from).collect(),
            network,
        }
    }

    /// The places commands may write beneath (devices aside), real paths.
    pub fn writable(&self) -> &[PathBuf] {
        &self.writable
    }

    /// The paths no command may write to, even beneath a writable place.
    pub fn protected(&self) -> &[PathBuf] {
        &self.protected
    }

    /// The device nodes commands may write to.
    pub fn devices(&self) -> &[PathBuf] {
        &self.devices
    }

    /// What commands may do on the network.
    pub fn network(&self) -> Network {
        self.network
    }

    /// The protected paths that lie beneath a writable place: a backend that can only grant
    /// (Landlock) leaves them writable, one that can deny (Seatbelt) keeps them out of reach.
    pub fn protected_beneath_writable(&self) -> Vec<&Path> {
        self.protected
            .iter()
            .filter(|path| self.writable.iter().any(|place| path.starts_with(place)))
            .map(PathBuf::as_path)
            .collect()
    }
}

/// The folders shell commands run in `cwd` may write beneath (the device nodes aside): the
/// working directory, `$TMPDIR` as odek sees it and the `allow_write` entries (`~/`
/// expanded), as real paths. What lies there is the model's to change, so odek runs no
/// program of its own from there.
pub fn writable_places(cwd: &Path, allow_write: &[String]) -> Vec<PathBuf> {
    let home = crate::home::user_home();
    let mut writable = vec![real_path(cwd), real_path(&std::env::temp_dir())];
    writable.extend(
        allow_write
            .iter()
            .map(|entry| expand_home(entry, home.as_deref())),
    );
    writable
}

/// `entry` with a leading `~/` (or `~`) replaced by `home`, as a real path.
pub(crate) fn expand_home(entry: &str, home: Option<&Path>) -> PathBuf {
    match (entry.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => real_path(&home.join(rest)),
        _ if entry == "~" => home.map_or_else(|| PathBuf::from(entry), real_path),
        _ => real_path(Path::new(entry)),
    }
}

/// The path `path` really names: absolute, with every link of its existing part resolved
/// (a part that does not exist yet is kept as written beneath the resolved rest, so
/// `/tmp/new` is `/private/tmp/new` on macOS).
pub fn real_path(path: &Path) -> PathBuf {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => real_path(parent).join(name),
        _ => path,
    }
}

/// `paths` without those beneath another of them.
fn outermost(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths
        .iter()
        .filter(|path| {
            !paths
                .iter()
                .any(|other| other != *path && path.starts_with(other))
        })
        .cloned()
        .collect()
}

fn real_paths(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        let real = real_path(&path);
        if !out.contains(&real) {
            out.push(real);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn paths_are_taken_as_their_real_paths_even_where_they_do_not_exist_yet() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().canonicalize().expect("real").join("real");
        std::fs::create_dir(&real).expect("dir");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("link");
        assert_eq!(real_path(&link), real);
        assert_eq!(real_path(&link.join("new/deeper")), real.join("new/deeper"));
        let rules = Rules::new(
            [link.clone(), real.clone()],
            [link.join(".odek")],
            Network::Allow,
        );
        assert_eq!(
            rules.writable(),
            std::slice::from_ref(&real),
            "the link and its target are one place"
        );
        assert_eq!(rules.protected(), [real.join(".odek")]);
    }

    #[test]
    fn a_relative_path_is_made_absolute() {
        assert!(real_path(Path::new("no-such-folder/x")).is_absolute());
    }

    #[test]
    fn the_rules_of_a_working_directory_hold_it_tmpdir_the_entries_and_protect_the_home() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cwd = dir.path().join("project");
        let home = dir.path().join("odek-home");
        std::fs::create_dir_all(&cwd).expect("cwd");
        let config = dir.path().join("dotfiles/odek.json");
        std::fs::create_dir_all(config.parent().expect("parent")).expect("dotfiles");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::write(&config, "{}").expect("config");
        std::os::unix::fs::symlink(&config, home.join("config.json")).expect("link");
        let protected = [home.clone(), home.join("config.json")];
        let rules = Rules::for_commands(&cwd, &["/opt/cache".into()], &protected, Network::None);
        let real_cwd = cwd.canonicalize().expect("real");
        assert_eq!(rules.writable()[0], real_cwd);
        assert_eq!(rules.writable()[1], real_path(&std::env::temp_dir()));
        assert!(rules.writable().contains(&PathBuf::from("/opt/cache")));
        // The configuration file is protected where it really is, the link aside.
        assert_eq!(rules.protected(), [real_path(&home), real_path(&config)]);
        assert_eq!(rules.network(), Network::None);
        assert!(rules.devices().contains(&PathBuf::from("/dev/null")));
        // The test's folder lies in $TMPDIR, a writable place: so does the home.
        assert_eq!(
            rules.protected_beneath_writable(),
            [real_path(&home), real_path(&config)]
        );
    }

    #[test]
    fn a_home_beneath_a_writable_place_is_found() {
        let rules = Rules::new(
            [PathBuf::from("/work/p")],
            [
                PathBuf::from("/work/p/.odek"),
                PathBuf::from("/home/ana/.odek"),
            ],
            Network::Allow,
        );
        assert_eq!(
            rules.protected_beneath_writable(),
            [Path::new("/work/p/.odek")]
        );
    }
}
