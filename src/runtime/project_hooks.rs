//! Project hooks: `.odek/hooks.json` in the working directory and, with
//! `hooks.import_claude`, the `hooks` of its `.claude/settings.json`. A cloned project must
//! not run programs by itself, so each file's hooks run only while the user trusts that
//! file's exact content (`odek hooks trust`, recorded by hash in `<home>/hooks-trust.json`):
//! an untrusted or changed file is ignored with a warning (see docs/HOOKS.md).
//!
//! The trust covers what the hooks run, not only the file: the project files their commands
//! name (`./scripts/guard.sh`, `python3 hooks/check.py`, `"$CLAUDE_PROJECT_DIR"/x.sh`),
//! present or not, and everything under `.claude/hooks/`. A change to any of them is a
//! change to the file; writes to them are persistence for the classifier.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::hooks::{Hook, HookEvent, HooksConfig, compile};
use crate::skills::trust::{TrustState, TrustStore, content_hash, folder_hash};

/// The trust records of project hooks files, in the odek home.
pub const TRUST_FILE: &str = "hooks-trust.json";
/// odek's project hooks file, relative to the working directory.
pub const ODEK_FILE: &str = ".odek/hooks.json";
/// Claude Code's project settings, whose `hooks` odek runs with `hooks.import_claude`.
pub const CLAUDE_FILE: &str = ".claude/settings.json";
/// Claude Code's folder of hook scripts: its whole content is covered by the trust.
pub const CLAUDE_HOOKS_DIR: &str = ".claude/hooks";
/// Endings that make a bare word of a hook's command (`python3 check.py`) a file it runs.
const SCRIPT_ENDINGS: &[&str] = &[
    "sh", "bash", "zsh", "py", "js", "mjs", "cjs", "ts", "rb", "pl", "php", "lua",
];
/// Most bytes of one covered file.
const MAX_COVERED_BYTES: u64 = 64 * 1024 * 1024;

/// Why a project hooks file's hooks cannot run (shown by `odek hooks list` and in the
/// start-up warning of a trusted file).
#[derive(Debug, thiserror::Error)]
pub enum ProjectHooksError {
    /// The file is not JSON.
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// Its `hooks` is not a map of events.
    #[error("\"hooks\" is not an object of events")]
    NotEvents,
    /// Its events do not read as hooks.
    #[error("{0}")]
    BadEvents(#[source] serde_json::Error),
    /// Its hooks do not compile (an unknown event, a bad matcher, not a command).
    #[error(transparent)]
    Hooks(#[from] crate::hooks::HooksError),
    /// A file its hooks run cannot be hashed, so the file cannot be trusted.
    #[error("{file}, which its hooks run, cannot be hashed: {why}")]
    Uncovered {
        /// The file, relative to the project.
        file: String,
        /// Why.
        why: String,
    },
}

impl crate::error::Classified for ProjectHooksError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            ProjectHooksError::Uncovered { .. } => crate::error::ErrorKind::Io,
            _ => crate::error::ErrorKind::Config,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        Some(
            "fix the project's hooks file (docs/HOOKS.md), then review it and run `odek hooks trust`",
        )
    }
}

/// A project hooks file as read: what is trusted or run is exactly these bytes.
#[derive(Debug)]
pub struct ProjectHooksFile {
    /// Its path.
    pub path: PathBuf,
    /// The hash of its bytes.
    pub hash: String,
    /// Its hooks, or why they cannot be run.
    pub hooks: Result<Vec<Hook>, ProjectHooksError>,
    /// Events of Claude Code that odek does not have, left out of an imported file.
    pub skipped: Vec<String>,
    /// The project files the hash covers beside the file itself (absolute): those its
    /// hooks' commands name, present or not, and `.claude/hooks/` when it exists.
    pub covers: Vec<PathBuf>,
}

impl ProjectHooksFile {
    /// Whether the records trust this content.
    pub fn state(&self, store: &TrustStore) -> TrustState {
        store.state_hashed(&self.path, &self.hash)
    }
}

/// The project hooks files of `cwd` that exist and hold hooks (a `.claude/settings.json`
/// without `hooks` is not one).
pub fn project_files(cwd: &Path, import_claude: bool) -> Vec<ProjectHooksFile> {
    let mut files = Vec::new();
    for (name, claude) in [(ODEK_FILE, false), (CLAUDE_FILE, true)] {
        if claude && !import_claude {
            continue;
        }
        let path = cwd.join(name);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let (config, skipped) = match parse(&bytes, claude) {
            Ok(None) => continue,
            Ok(Some(parsed)) => (Ok(parsed.0), parsed.1),
            Err(why) => (Err(why), Vec::new()),
        };
        let hooks = config.and_then(|c| Ok(compile(&c, Some(&path))?));
        let covers = hooks
            .as_ref()
            .map_or_else(|_| Vec::new(), |h| covered_files(h, cwd));
        let (hash, hooks) = match trust_hash(&bytes, cwd, &covers) {
            Ok(hash) => (hash, hooks),
            Err(why) => (content_hash(&bytes), Err(why)),
        };
        files.push(ProjectHooksFile {
            hooks,
            hash,
            path,
            skipped,
            covers,
        });
    }
    files
}

/// The project files `hooks` run beside their own file: what each command names (see
/// [`named_files`]), then `.claude/hooks/` when it exists; each once, in that order.
fn covered_files(hooks: &[Hook], cwd: &Path) -> Vec<PathBuf> {
    let mut covers: Vec<PathBuf> = Vec::new();
    let claude_dir = cwd.join(CLAUDE_HOOKS_DIR);
    let named = hooks.iter().flat_map(|h| named_files(&h.command, cwd));
    for path in named.chain(claude_dir.is_dir().then_some(claude_dir)) {
        if !covers.contains(&path) {
            covers.push(path);
        }
    }
    covers
}

/// The project files a hook's command names (absolute, beneath `cwd`, present or not): each
/// word that holds a `/` or ends like a script (`.sh`, `.py`, `.js`…), relative to the
/// project or under `$CLAUDE_PROJECT_DIR`, quotes taken off. A word that leaves the project
/// (`..`, an absolute path elsewhere, `~`, another variable) is not the project's to cover.
pub fn named_files(command: &str, cwd: &Path) -> Vec<PathBuf> {
    let text = command
        .replace("\"$CLAUDE_PROJECT_DIR\"", "$CLAUDE_PROJECT_DIR")
        .replace("${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR");
    let separators = |c: char| c.is_whitespace() || ";&|()<>`=".contains(c);
    let mut found = Vec::new();
    for word in text.split(separators) {
        let word = word.trim_matches(|c| c == '"' || c == '\'');
        let relative = match word.strip_prefix("$CLAUDE_PROJECT_DIR/") {
            Some(rest) => rest,
            None if word.starts_with(['$', '~', '-']) => continue,
            None => match Path::new(word).strip_prefix(cwd) {
                Ok(rest) => rest.to_str().unwrap_or(""),
                Err(_) if word.starts_with('/') => continue,
                Err(_) => word,
            },
        };
        let script_ending = relative
            .rsplit_once('.')
            .is_some_and(|(stem, ending)| !stem.is_empty() && SCRIPT_ENDINGS.contains(&ending));
        if !(relative.contains('/') || script_ending) {
            continue;
        }
        if let Some(inside) = inside(relative) {
            found.push(cwd.join(inside));
        }
    }
    found
}

/// `relative` without `.` and `..`, when it stays inside the folder it is relative to.
fn inside(relative: &str) -> Option<PathBuf> {
    let mut kept: Vec<&str> = Vec::new();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                kept.pop()?;
            }
            part => kept.push(part),
        }
    }
    (!kept.is_empty()).then(|| kept.iter().collect())
}

/// What is trusted of a hooks file: its bytes alone when it names no project file (the
/// hash older records hold), else its bytes and each covered file's path and state —
/// present (its permission bits and bytes), absent, or a folder's [`folder_hash`]. An
/// error when a covered file cannot be hashed: the file then cannot be trusted.
fn trust_hash(bytes: &[u8], cwd: &Path, covers: &[PathBuf]) -> Result<String, ProjectHooksError> {
    use std::os::unix::fs::PermissionsExt;
    if covers.is_empty() {
        return Ok(content_hash(bytes));
    }
    let mut all = Vec::new();
    let mut field = |part: &[u8]| {
        all.extend_from_slice(&(part.len() as u64).to_le_bytes());
        all.extend_from_slice(part);
    };
    field(bytes);
    for path in covers {
        let shown = path.strip_prefix(cwd).unwrap_or(path).display().to_string();
        let cannot = |why: String| ProjectHooksError::Uncovered {
            file: shown.clone(),
            why,
        };
        field(shown.as_bytes());
        match std::fs::metadata(path) {
            Err(_) => field(b"absent"),
            Ok(meta) if meta.is_dir() => {
                let hash = folder_hash(path).map_err(|e| cannot(e.to_string()))?;
                field(b"folder");
                field(hash.as_bytes());
            }
            Ok(meta) if meta.len() > MAX_COVERED_BYTES => {
                return Err(cannot(format!("over {} MiB", MAX_COVERED_BYTES >> 20)));
            }
            Ok(meta) => {
                let content = std::fs::read(path).map_err(|e| cannot(e.to_string()))?;
                field(b"file");
                field(&(meta.permissions().mode() & 0o7777).to_le_bytes());
                field(&content);
            }
        }
    }
    Ok(content_hash(&all))
}

/// The hooks of a file: `{"hooks": {…}}` (a bare map of events in odek's own file too);
/// `None` for Claude's settings without hooks. Claude's events that odek lacks are skipped.
fn parse(
    bytes: &[u8],
    claude: bool,
) -> Result<Option<(HooksConfig, Vec<String>)>, ProjectHooksError> {
    let value: Value = serde_json::from_slice(bytes).map_err(ProjectHooksError::NotJson)?;
    let section = match value.get("hooks") {
        Some(section) => section.clone(),
        None if claude => return Ok(None),
        None => value,
    };
    let Value::Object(mut events) = section else {
        return Err(ProjectHooksError::NotEvents);
    };
    let mut skipped = Vec::new();
    if claude {
        events.retain(|name, _| {
            let known = HookEvent::parse(name).is_some();
            if !known {
                skipped.push(name.clone());
            }
            known
        });
    }
    let config: HooksConfig =
        serde_json::from_value(Value::Object(events)).map_err(ProjectHooksError::BadEvents)?;
    Ok((!config.is_empty()).then_some((config, skipped)))
}

/// The hooks of the trusted project files of `cwd`, and a warning for each file left out.
/// What a trusted file's hash covers (the file and the files its hooks run) becomes
/// persistence for the classifier ([`crate::tools::danger::protect_hook_files`]): the
/// model's write to it is asked about, like one to `.git/hooks/`.
pub fn trusted_hooks(home: &Path, cwd: &Path, import_claude: bool) -> (Vec<Hook>, Vec<String>) {
    let files = project_files(cwd, import_claude);
    if files.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let (store, mut warnings) = match TrustStore::load_in(home, TRUST_FILE) {
        Ok(store) => (store, Vec::new()),
        Err(e) => (TrustStore::default(), vec![format!("odek: {e}")]),
    };
    let mut hooks = Vec::new();
    for file in files {
        // A file name and an error quoting the file are the project's text: escaped.
        let path = crate::text::visible(&file.path.display().to_string(), false).into_owned();
        match (file.state(&store), file.hooks) {
            (TrustState::Trusted, Ok(found)) => {
                let mut guarded = file.covers;
                guarded.extend([file.path.clone(), cwd.join(CLAUDE_HOOKS_DIR)]);
                crate::tools::danger::protect_hook_files(cwd, &guarded);
                hooks.extend(found);
            }
            (TrustState::Trusted, Err(why)) => {
                let why = crate::text::visible(&why.to_string(), false).into_owned();
                warnings.push(format!("odek: ignoring the project hooks in {path}: {why}"));
            }
            (TrustState::NotTrusted, _) => warnings.push(format!(
                "odek: ignoring the project hooks in {path}: not trusted; review them, then run `odek hooks trust`"
            )),
            (TrustState::Changed(_), _) => warnings.push(format!(
                "odek: ignoring the project hooks in {path}: changed since you trusted it (the file or a file its hooks run); review them, then run `odek hooks trust` again"
            )),
        }
    }
    (hooks, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_a_hook_command_names_are_found_in_every_usual_spelling() {
        let cwd = Path::new("/p");
        let found = |command: &str| named_files(command, cwd);
        let one = |relative: &str| vec![cwd.join(relative)];
        assert_eq!(found("./scripts/guard.sh"), one("scripts/guard.sh"));
        assert_eq!(found("$CLAUDE_PROJECT_DIR/hooks/x.sh"), one("hooks/x.sh"));
        assert_eq!(
            found("\"$CLAUDE_PROJECT_DIR\"/hooks/x.sh"),
            one("hooks/x.sh")
        );
        assert_eq!(
            found("\"${CLAUDE_PROJECT_DIR}/hooks/x.sh\" --fast"),
            one("hooks/x.sh")
        );
        assert_eq!(found("bash scripts/x.sh"), one("scripts/x.sh"));
        assert_eq!(found("python3 check.py 2>/dev/null"), one("check.py"));
        assert_eq!(found("node x.js && echo ok"), one("x.js"));
        assert_eq!(found("/p/tools/lint"), one("tools/lint"));
        for outside in [
            "python3 ~/.odek/guard.py",
            "/usr/local/bin/guard",
            "sh ../other/x.sh",
            "$HOME/x.sh",
            "echo hello",
        ] {
            assert!(found(outside).is_empty(), "{outside}: {:?}", found(outside));
        }
    }

    #[test]
    fn the_trust_covers_the_named_scripts_present_or_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cwd = dir.path();
        std::fs::create_dir_all(cwd.join(".odek")).expect("mkdir");
        let hooks =
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./guard.sh"}]}]}}"#;
        std::fs::write(cwd.join(ODEK_FILE), hooks).expect("write");
        let hash = || project_files(cwd, false)[0].hash.clone();
        let absent = hash();
        assert_ne!(absent, content_hash(hooks.as_bytes()));
        std::fs::write(cwd.join("guard.sh"), "exit 0\n").expect("write");
        let present = hash();
        assert_ne!(present, absent);
        std::fs::write(cwd.join("guard.sh"), "exit 2\n").expect("write");
        assert_ne!(hash(), present);
        assert_eq!(
            project_files(cwd, false)[0].covers,
            vec![cwd.join("guard.sh")]
        );
        std::fs::create_dir_all(cwd.join(CLAUDE_HOOKS_DIR)).expect("mkdir");
        let with_folder = hash();
        std::fs::write(cwd.join(CLAUDE_HOOKS_DIR).join("a.py"), "x").expect("write");
        assert_ne!(hash(), with_folder);
    }
}
