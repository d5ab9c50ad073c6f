//! Claude Code's tool names read as odek's: the `tools` of an agent file and the
//! `allowed-tools` of a command written for Claude Code (`Read, Grep, Glob`,
//! `Bash(git add:*)`, `mcp__github__create_issue`) name the odek tools that do the same work.
//!
//! A name may widen to several odek tools (`Read` is `read_file` and `batch_read`); odek's own
//! names and MCP names (`<server>__<tool>`) pass through; a pattern in parentheses is dropped,
//! since odek cannot narrow a tool to some of its commands (the danger policy still decides
//! each call); an unknown name is reported, never fatal. See docs/NAMED_AGENTS.md.

use serde_yaml_ng::Value;

use super::catalog::{self, MCP_SEPARATOR};

/// Claude Code's prefix of MCP tools: `mcp__<server>__<tool>`.
pub const CLAUDE_MCP_PREFIX: &str = "mcp__";

/// What stands for every tool of an MCP server in a mapped list: `<server>__*`.
pub const ANY_TOOL: &str = "*";

/// Claude Code's tool names and the odek tools each stands for.
pub const CLAUDE_TOOLS: &[(&str, &[&str])] = &[
    ("Read", &["read_file", "batch_read"]),
    ("Write", &["write_file"]),
    ("Edit", &["patch", "batch_patch"]),
    ("MultiEdit", &["patch", "batch_patch"]),
    ("Bash", &["shell", "background"]),
    ("BashOutput", &["background"]),
    ("KillShell", &["background"]),
    ("KillBash", &["background"]),
    ("Glob", &["glob"]),
    ("LS", &["glob"]),
    ("Grep", &["search_files"]),
    ("WebFetch", &["web_fetch"]),
    ("WebSearch", &["web_search"]),
    ("Task", &["delegate_tasks"]),
    ("Agent", &["delegate_tasks"]),
    ("TodoWrite", &["plan"]),
    ("TodoRead", &["plan"]),
    ("AskUserQuestion", &["clarify"]),
    ("Skill", &["skill_load", "skill_list"]),
];

/// A list of tool names read as odek's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mapped {
    /// odek's tool names, each once, in the order the list first named them; `<server>__*`
    /// for every tool of an MCP server (test a name with [`allows`]).
    pub tools: Vec<String>,
    /// Names that are neither Claude Code's, odek's nor an MCP tool's: left out.
    pub unknown: Vec<String>,
    /// Entries with a pattern (`Bash(git add:*)`), whose tool is allowed whole.
    pub patterns: Vec<String>,
}

impl Mapped {
    /// One line per unknown name and per dropped pattern, for the caller to show.
    pub fn warnings(&self) -> Vec<String> {
        let unknown = self.unknown.iter().map(|name| {
            format!("unknown tool \"{name}\" (neither Claude Code's nor odek's): left out")
        });
        let patterns = self.patterns.iter().map(|entry| {
            format!(
                "\"{entry}\": odek cannot limit a tool to a pattern; the whole tool is allowed and the danger policy decides each call"
            )
        });
        unknown.chain(patterns).collect()
    }
}

/// The odek tools one name stands for: a Claude Code name (a pattern in parentheses
/// dropped), an odek name, or an MCP name in either spelling; `None` when unknown.
pub fn odek_names(name: &str) -> Option<Vec<String>> {
    let bare = name.split_once('(').map_or(name, |(tool, _)| tool).trim();
    if let Some((_, tools)) = CLAUDE_TOOLS.iter().find(|(claude, _)| *claude == bare) {
        return Some(tools.iter().map(|t| t.to_string()).collect());
    }
    if catalog::is_builtin(bare) {
        return Some(vec![bare.to_string()]);
    }
    if let Some(rest) = bare.strip_prefix(CLAUDE_MCP_PREFIX) {
        return mcp_name(rest).map(|n| vec![n]);
    }
    let well_formed = bare
        .split_once(MCP_SEPARATOR)
        .is_some_and(|(server, tool)| !server.is_empty() && !tool.is_empty());
    well_formed.then(|| vec![bare.to_string()])
}

/// `<server>__<tool>` (or `<server>` alone: every tool of it) as odek names MCP tools.
fn mcp_name(rest: &str) -> Option<String> {
    let (server, tool) = rest.split_once(MCP_SEPARATOR).unwrap_or((rest, ANY_TOOL));
    let tool = if tool.is_empty() { ANY_TOOL } else { tool };
    (!server.is_empty()).then(|| format!("{server}{MCP_SEPARATOR}{tool}"))
}

/// Reads every name of `names` (see [`odek_names`]).
pub fn map<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Mapped {
    let mut mapped = Mapped::default();
    for name in names {
        let name = name.as_ref().trim();
        if name.is_empty() {
            continue;
        }
        match odek_names(name) {
            None => mapped.unknown.push(name.to_string()),
            Some(tools) => {
                if name.contains('(') {
                    mapped.patterns.push(name.to_string());
                }
                for tool in tools {
                    if !mapped.tools.contains(&tool) {
                        mapped.tools.push(tool);
                    }
                }
            }
        }
    }
    mapped
}

/// The entries of a comma- or space-separated list (`Read, Grep, Glob`,
/// `Bash(git add:*) Read`); a separator inside parentheses belongs to its entry.
pub fn split_list(text: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c == ',' || c.is_whitespace()) {
            if !current.is_empty() {
                entries.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        entries.push(current);
    }
    entries
}

/// A front matter's list of tools is neither a string nor a list of strings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be a comma-separated string or a list of strings")]
pub struct NotAToolList;

impl crate::error::Classified for NotAToolList {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Usage
    }
}

/// The entries of a front matter's value: a string ([`split_list`]) or a list of strings;
/// `Ok(None)` when absent or null.
pub fn entries_of(value: Option<&Value>) -> Result<Option<Vec<String>>, NotAToolList> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(split_list(s))),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|v| v.as_str().map(|s| s.trim().to_string()))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or(NotAToolList),
        Some(_) => Err(NotAToolList),
    }
}

/// True when the mapped list `tools` allows the tool `name` (by name, or as a tool of an
/// MCP server the list allows whole: `<server>__*`).
pub fn allows(tools: &[String], name: &str) -> bool {
    tools.iter().any(|allowed| {
        allowed == name
            || allowed
                .strip_suffix(ANY_TOOL)
                .is_some_and(|server| server.ends_with(MCP_SEPARATOR) && name.starts_with(server))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &str) -> Vec<String> {
        map(split_list(list)).tools
    }

    #[test]
    fn every_mapped_name_is_one_of_odeks_tools() {
        for (claude, tools) in CLAUDE_TOOLS {
            for tool in *tools {
                assert!(catalog::is_builtin(tool), "{claude} → {tool}");
            }
        }
    }

    #[test]
    fn claude_code_names_become_odeks() {
        assert_eq!(
            names("Read, Grep, Glob"),
            ["read_file", "batch_read", "search_files", "glob"]
        );
        assert_eq!(
            names("Edit MultiEdit Write"),
            ["patch", "batch_patch", "write_file"]
        );
        assert_eq!(
            names("Bash, BashOutput, KillShell"),
            ["shell", "background"]
        );
        assert_eq!(names("Task,Agent,TodoWrite"), ["delegate_tasks", "plan"]);
        assert_eq!(
            names("AskUserQuestion Skill LS"),
            ["clarify", "skill_load", "skill_list", "glob"]
        );
        assert_eq!(names("WebFetch, WebSearch"), ["web_fetch", "web_search"]);
        assert_eq!(
            names("read_file, shell, memory"),
            ["read_file", "shell", "memory"]
        );
    }

    #[test]
    fn mcp_names_take_odeks_spelling_and_a_whole_server_is_a_wildcard() {
        let mapped = names("mcp__github__create_issue, mcp__sentry, docs__search");
        assert_eq!(
            mapped,
            ["github__create_issue", "sentry__*", "docs__search"]
        );
        assert!(allows(&mapped, "sentry__list_events"));
        assert!(allows(&mapped, "github__create_issue"));
        assert!(!allows(&mapped, "github__delete_repo"));
        assert!(!allows(&mapped, "sentry"));
    }

    #[test]
    fn patterns_keep_their_tool_and_are_reported() {
        let entries = split_list("Bash(git add:*), Bash(git status:*) Read");
        assert_eq!(entries, ["Bash(git add:*)", "Bash(git status:*)", "Read"]);
        let mapped = map(&entries);
        assert_eq!(
            mapped.tools,
            ["shell", "background", "read_file", "batch_read"]
        );
        assert_eq!(mapped.patterns.len(), 2);
        assert!(mapped.warnings()[0].contains("danger policy"));
    }

    #[test]
    fn unknown_names_are_reported_not_fatal() {
        let mapped = map(["Read", "NotebookEdit", "__x", "mcp__"]);
        assert_eq!(mapped.tools, ["read_file", "batch_read"]);
        assert_eq!(mapped.unknown, ["NotebookEdit", "__x", "mcp__"]);
        assert!(mapped.warnings()[0].contains("\"NotebookEdit\""));
    }

    #[test]
    fn both_shapes_of_a_front_matter_list_are_read() {
        let yaml = |text: &str| serde_yaml_ng::from_str::<Value>(text).unwrap();
        let list = yaml("[Read, \"Bash(ls:*)\"]");
        assert_eq!(
            entries_of(Some(&list)).unwrap().unwrap(),
            ["Read", "Bash(ls:*)"]
        );
        let text = yaml("\"Read, Grep\"");
        assert_eq!(entries_of(Some(&text)).unwrap().unwrap(), ["Read", "Grep"]);
        assert_eq!(entries_of(None).unwrap(), None);
        assert_eq!(entries_of(Some(&yaml("3"))), Err(NotAToolList));
        assert_eq!(entries_of(Some(&yaml("[1, 2]"))), Err(NotAToolList));
    }
}
