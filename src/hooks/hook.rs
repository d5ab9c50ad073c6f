//! One runnable hook (its event, matcher and command, and where it came from) and the
//! compiling of a configuration into them: unknown events, bad matchers and hooks that are
//! not commands are errors.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::protocol::hook_tool_name;
use super::{DEFAULT_TIMEOUT, HookEvent, HooksConfig, HooksError};

/// One runnable hook: its event, matcher and command, and where it came from.
#[derive(Debug, Clone)]
pub struct Hook {
    /// The event.
    pub event: HookEvent,
    matcher: Option<regex::Regex>,
    /// The matcher as written (empty: every tool).
    pub matcher_text: String,
    /// The command line.
    pub command: String,
    /// Its timeout.
    pub timeout: Duration,
    /// The file it came from (`None`: the global configuration).
    pub source: Option<PathBuf>,
}

impl Hook {
    /// Whether the hook runs for `tool` (odek's name; Claude Code's alias matches too).
    pub fn matches(&self, tool: Option<&str>) -> bool {
        let (Some(matcher), Some(tool)) = (&self.matcher, tool) else {
            return true;
        };
        matcher.is_match(tool) || matcher.is_match(&hook_tool_name(tool))
    }
}

/// Every hook of a configuration, checked: unknown events, bad matchers and hooks that are
/// not commands are errors.
pub fn compile(config: &HooksConfig, source: Option<&Path>) -> Result<Vec<Hook>, HooksError> {
    let mut hooks = Vec::new();
    for (name, entries) in config {
        let event = HookEvent::parse(name).ok_or_else(|| HooksError::UnknownEvent(name.clone()))?;
        for entry in entries {
            let matcher = match entry.matcher.trim() {
                "" | "*" => None,
                text => Some(regex::Regex::new(&format!("^(?:{text})$")).map_err(|e| {
                    HooksError::BadMatcher {
                        event: name.clone(),
                        matcher: text.to_string(),
                        reason: e.to_string(),
                    }
                })?),
            };
            for command in &entry.hooks {
                if command.kind != "command" {
                    return Err(HooksError::BadCommand {
                        event: name.clone(),
                        reason: format!(
                            "hook type {:?}: only \"command\" hooks are run",
                            command.kind
                        ),
                    });
                }
                if command.command.trim().is_empty() {
                    return Err(HooksError::BadCommand {
                        event: name.clone(),
                        reason: "a hook without a command".into(),
                    });
                }
                hooks.push(Hook {
                    event,
                    matcher: matcher.clone().filter(|_| event.is_tool_event()),
                    matcher_text: entry.matcher.trim().to_string(),
                    command: command.command.clone(),
                    timeout: command
                        .timeout
                        .map_or(DEFAULT_TIMEOUT, Duration::from_secs)
                        .max(Duration::from_secs(1)),
                    source: source.map(Path::to_path_buf),
                });
            }
        }
    }
    Ok(hooks)
}
