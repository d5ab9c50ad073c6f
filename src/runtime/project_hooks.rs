//! Project hooks: `.odek/hooks.json` in the working directory and, with
//! `hooks.import_claude`, the `hooks` of its `.claude/settings.json`. A cloned project must
//! not run programs by itself, so each file's hooks run only while the user trusts that
//! file's exact content (`odek hooks trust`, recorded by hash in `<home>/hooks-trust.json`):
//! an untrusted or changed file is ignored with a warning (see docs/HOOKS.md).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::hooks::{Hook, HookEvent, HooksConfig, compile};
use crate::skills::trust::{TrustState, TrustStore, content_hash};

/// The trust records of project hooks files, in the odek home.
pub const TRUST_FILE: &str = "hooks-trust.json";
/// odek's project hooks file, relative to the working directory.
pub const ODEK_FILE: &str = ".odek/hooks.json";
/// Claude Code's project settings, whose `hooks` odek runs with `hooks.import_claude`.
pub const CLAUDE_FILE: &str = ".claude/settings.json";

/// A project hooks file as read: what is trusted or run is exactly these bytes.
#[derive(Debug)]
pub struct ProjectHooksFile {
    /// Its path.
    pub path: PathBuf,
    /// The hash of its bytes.
    pub hash: String,
    /// Its hooks, or why they cannot be run.
    pub hooks: Result<Vec<Hook>, String>,
    /// Events of Claude Code that odek does not have, left out of an imported file.
    pub skipped: Vec<String>,
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
        files.push(ProjectHooksFile {
            hooks: config.and_then(|c| compile(&c, Some(&path)).map_err(|e| e.to_string())),
            hash: content_hash(&bytes),
            path,
            skipped,
        });
    }
    files
}

/// The hooks of a file: `{"hooks": {…}}` (a bare map of events in odek's own file too);
/// `None` for Claude's settings without hooks. Claude's events that odek lacks are skipped.
fn parse(bytes: &[u8], claude: bool) -> Result<Option<(HooksConfig, Vec<String>)>, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let section = match value.get("hooks") {
        Some(section) => section.clone(),
        None if claude => return Ok(None),
        None => value,
    };
    let Value::Object(mut events) = section else {
        return Err("\"hooks\" is not an object of events".into());
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
        serde_json::from_value(Value::Object(events)).map_err(|e| e.to_string())?;
    Ok((!config.is_empty()).then_some((config, skipped)))
}

/// The hooks of the trusted project files of `cwd`, and a warning for each file left out.
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
        let path = file.path.display();
        match (file.state(&store), file.hooks) {
            (TrustState::Trusted, Ok(found)) => hooks.extend(found),
            (TrustState::Trusted, Err(why)) => {
                warnings.push(format!("odek: ignoring the project hooks in {path}: {why}"));
            }
            (TrustState::NotTrusted, _) => warnings.push(format!(
                "odek: ignoring the project hooks in {path}: not trusted; review them, then run `odek hooks trust`"
            )),
            (TrustState::Changed(_), _) => warnings.push(format!(
                "odek: ignoring the project hooks in {path}: changed since you trusted it; review them, then run `odek hooks trust` again"
            )),
        }
    }
    (hooks, warnings)
}
