//! The one table of odek's own tools: a row per tool — its name, the emoji of its lines,
//! what its calls are about (the argument that names it), and whether its results are
//! external content. Every list of tools derives from it: the registry's names and order,
//! the external-content check of saved transcripts, the terminal's, Telegram's and the web
//! UI's emoji (`ui/js/emoji.js`, kept equal by a test), the files a call reads or changes.
//! Tools of MCP servers have no row: they are named `<server>__<tool>` and are external.

use serde_json::Value;

/// One tool odek offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolRow {
    /// The name the model calls it by.
    pub name: &'static str,
    /// The emoji beside its calls on the terminal, in chats and in the web UI ([`DEFAULT_EMOJI`]
    /// when it has none of its own).
    pub emoji: Option<&'static str>,
    /// What one call is about, read from its arguments.
    pub subject: Subject,
    /// True when its results come from outside the user's machine and trust (the web,
    /// sub-agents): a turn that ran it is tainted.
    pub external: bool,
    /// True when its results are what files hold (a cloned repository's README as much as
    /// the user's notes): after it, a turn's writes to the user's memory store wait for
    /// review.
    pub reads_files: bool,
    /// What the tool does, as editors group tool calls (`odek acp`'s tool-call kind).
    pub kind: ToolKind,
}

/// What a tool does, as editors group tool calls: the Agent Client Protocol's tool kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Reads files or data.
    Read,
    /// Changes files.
    Edit,
    /// Searches files or data.
    Search,
    /// Runs a command.
    Execute,
    /// Thinks or plans.
    Think,
    /// Fetches from the network.
    Fetch,
    /// Anything else.
    Other,
}

impl ToolKind {
    /// The kind's name on the wire (`read`, `edit`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Read => "read",
            ToolKind::Edit => "edit",
            ToolKind::Search => "search",
            ToolKind::Execute => "execute",
            ToolKind::Think => "think",
            ToolKind::Fetch => "fetch",
            ToolKind::Other => "other",
        }
    }
}

/// The argument that says what a call is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// The file named by `path`, read (`changes: false`) or written.
    Path {
        /// True when the call changes the file.
        changes: bool,
    },
    /// The files named by the `path` of each entry of the array `list`.
    PathsIn {
        /// The array's argument.
        list: &'static str,
        /// True when the call changes the files.
        changes: bool,
    },
    /// The shell command of `command`.
    Command,
    /// The address of `url`.
    Url,
    /// The text of another argument (a pattern, a query, a question, a name).
    Arg(&'static str),
    /// No one argument.
    Nothing,
}

/// The separator between an MCP server's name and its tool's name (`<server>__<tool>`).
pub const MCP_SEPARATOR: &str = "__";

/// The emoji of MCP tools.
pub const MCP_EMOJI: &str = "🔌";

/// The emoji of a tool without one of its own.
pub const DEFAULT_EMOJI: &str = "🔧";

const fn row(name: &'static str, emoji: &'static str, subject: Subject) -> ToolRow {
    ToolRow {
        name,
        emoji: Some(emoji),
        subject,
        external: false,
        reads_files: false,
        kind: ToolKind::Other,
    }
}

const fn file_reader(name: &'static str, emoji: &'static str, subject: Subject) -> ToolRow {
    ToolRow {
        reads_files: true,
        ..row(name, emoji, subject)
    }
}

const fn plain(name: &'static str, subject: Subject) -> ToolRow {
    ToolRow {
        name,
        emoji: None,
        subject,
        external: false,
        reads_files: false,
        kind: ToolKind::Other,
    }
}

const fn external(name: &'static str, emoji: &'static str, subject: Subject) -> ToolRow {
    ToolRow {
        name,
        emoji: Some(emoji),
        subject,
        external: true,
        reads_files: false,
        kind: ToolKind::Other,
    }
}

impl ToolRow {
    /// The row with `kind` instead of [`ToolKind::Other`].
    const fn with_kind(self, kind: ToolKind) -> ToolRow {
        ToolRow { kind, ..self }
    }
}

/// `read_file`.
pub const READ_FILE: ToolRow =
    file_reader("read_file", "📖", Subject::Path { changes: false }).with_kind(ToolKind::Read);
/// `write_file`.
pub const WRITE_FILE: ToolRow =
    row("write_file", "📝", Subject::Path { changes: true }).with_kind(ToolKind::Edit);
/// `search_files`.
pub const SEARCH_FILES: ToolRow =
    file_reader("search_files", "🔍", Subject::Arg("pattern")).with_kind(ToolKind::Search);
/// `patch`.
pub const PATCH: ToolRow =
    row("patch", "🩹", Subject::Path { changes: true }).with_kind(ToolKind::Edit);
/// `glob`.
pub const GLOB: ToolRow = row("glob", "📂", Subject::Arg("pattern")).with_kind(ToolKind::Search);
/// `batch_read`.
pub const BATCH_READ: ToolRow = file_reader(
    "batch_read",
    "📚",
    Subject::PathsIn {
        list: "files",
        changes: false,
    },
)
.with_kind(ToolKind::Read);
/// `batch_patch`.
pub const BATCH_PATCH: ToolRow = row(
    "batch_patch",
    "🧩",
    Subject::PathsIn {
        list: "patches",
        changes: true,
    },
)
.with_kind(ToolKind::Edit);
/// `shell`.
pub const SHELL: ToolRow =
    file_reader("shell", "💻", Subject::Command).with_kind(ToolKind::Execute);
/// `background` (a job's output is what a command printed, as `shell`'s).
pub const BACKGROUND: ToolRow =
    file_reader("background", "⏳", Subject::Arg("action")).with_kind(ToolKind::Execute);
/// `delegate_tasks`.
pub const DELEGATE_TASKS: ToolRow = external("delegate_tasks", "🤝", Subject::Nothing);
/// `web_fetch`.
pub const WEB_FETCH: ToolRow = external("web_fetch", "🌐", Subject::Url).with_kind(ToolKind::Fetch);
/// `web_search`.
pub const WEB_SEARCH: ToolRow =
    external("web_search", "🔎", Subject::Arg("query")).with_kind(ToolKind::Fetch);
/// `browser` (what a page says is outside content).
pub const BROWSER: ToolRow =
    external("browser", "🧭", Subject::Arg("action")).with_kind(ToolKind::Fetch);
/// `clarify`.
pub const CLARIFY: ToolRow = row("clarify", "❓", Subject::Arg("question"));
/// `memory`.
pub const MEMORY: ToolRow = plain("memory", Subject::Arg("action"));
/// `session_search` (a hit from a session that took in external content taints the turn
/// by itself).
pub const SESSION_SEARCH: ToolRow =
    plain("session_search", Subject::Arg("query")).with_kind(ToolKind::Search);
/// `skill_load`.
pub const SKILL_LOAD: ToolRow = plain("skill_load", Subject::Arg("name")).with_kind(ToolKind::Read);
/// `skill_list`.
pub const SKILL_LIST: ToolRow = plain("skill_list", Subject::Nothing);
/// `plan`.
pub const PLAN: ToolRow = row("plan", "📋", Subject::Arg("verb")).with_kind(ToolKind::Think);

/// Every tool odek offers, in registration order (`web_search` only when its instance is
/// configured, `browser` only when one is found, `memory` and `session_search` only with memory on, `skill_load` and
/// `skill_list` only when a skill is offered, `plan` only with planning on).
pub const TOOLS: &[ToolRow] = &[
    READ_FILE,
    WRITE_FILE,
    SEARCH_FILES,
    PATCH,
    GLOB,
    BATCH_READ,
    BATCH_PATCH,
    SHELL,
    BACKGROUND,
    DELEGATE_TASKS,
    WEB_FETCH,
    WEB_SEARCH,
    BROWSER,
    CLARIFY,
    MEMORY,
    SESSION_SEARCH,
    SKILL_LOAD,
    SKILL_LIST,
    PLAN,
];

/// The row of the tool `name`, when it is one of odek's own.
pub fn row_of(name: &str) -> Option<&'static ToolRow> {
    TOOLS.iter().find(|r| r.name == name)
}

/// True when `name` is one of odek's own tools.
pub fn is_builtin(name: &str) -> bool {
    row_of(name).is_some()
}

/// True when `name` is a tool of an MCP server (`<server>__<tool>`).
pub fn is_mcp(name: &str) -> bool {
    !is_builtin(name) && name.contains(MCP_SEPARATOR)
}

/// What `tool` does, as editors group tool calls ([`ToolKind::Other`] for MCP tools).
pub fn tool_kind(tool: &str) -> ToolKind {
    row_of(tool).map_or(ToolKind::Other, |row| row.kind)
}

/// The emoji shown beside a call of `tool`.
pub fn tool_emoji(tool: &str) -> &'static str {
    match row_of(tool) {
        Some(row) => row.emoji.unwrap_or(DEFAULT_EMOJI),
        None if tool.contains(MCP_SEPARATOR) => MCP_EMOJI,
        None => DEFAULT_EMOJI,
    }
}

/// True when a tool of this name brings in external content: a row marked external, and
/// every MCP tool. For transcripts, whose tool results carry only the name (a session saved
/// before, a Go-written one).
pub fn is_external_tool_name(name: &str) -> bool {
    row_of(name).map_or(name.contains(MCP_SEPARATOR), |row| row.external)
}

impl ToolRow {
    /// The files a call with `args` names (each once, in the order given): the `path` of a
    /// one-file tool, the paths of a batch; none for other tools.
    pub fn paths<'a>(&self, args: &'a Value) -> Vec<&'a str> {
        match self.subject {
            Subject::Path { .. } => args
                .get("path")
                .and_then(Value::as_str)
                .into_iter()
                .collect(),
            Subject::PathsIn { list, .. } => {
                let mut seen: Vec<&str> = Vec::new();
                let entries = args.get(list).and_then(Value::as_array);
                for path in entries
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e.get("path").and_then(Value::as_str))
                {
                    if !seen.contains(&path) {
                        seen.push(path);
                    }
                }
                seen
            }
            _ => Vec::new(),
        }
    }

    /// True when a call of this tool changes the files it names.
    pub fn changes_files(&self) -> bool {
        matches!(
            self.subject,
            Subject::Path { changes: true } | Subject::PathsIn { changes: true, .. }
        )
    }
}

/// The files a call of `tool` with the JSON arguments `arguments` changes (none for a tool
/// that changes no file, or arguments that are not JSON).
pub fn changed_paths(tool: &str, arguments: &str) -> Vec<String> {
    let Some(row) = row_of(tool).filter(|r| r.changes_files()) else {
        return Vec::new();
    };
    let Ok(args) = serde_json::from_str::<Value>(arguments) else {
        return Vec::new();
    };
    row.paths(&args).into_iter().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emoji_external_and_mcp_come_from_the_rows() {
        assert_eq!(tool_emoji("plan"), "📋");
        assert_eq!(tool_emoji("read_file"), "📖");
        assert_eq!(tool_emoji("shell"), "💻");
        assert_eq!(tool_emoji("memory"), DEFAULT_EMOJI);
        assert_eq!(tool_emoji("everything__echo"), "🔌");
        assert_eq!(tool_emoji("todo"), "🔧");
        assert_eq!(tool_emoji(""), "🔧");
        for name in [
            "web_fetch",
            "web_search",
            "browser",
            "delegate_tasks",
            "everything__echo",
        ] {
            assert!(is_external_tool_name(name), "{name}");
        }
        for name in ["read_file", "shell", "session_search", "todo"] {
            assert!(!is_external_tool_name(name), "{name}");
        }
        assert!(is_mcp("everything__echo") && !is_mcp("read_file"));
        let mut names: Vec<&str> = TOOLS.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len(), "a name has two rows");
    }

    #[test]
    fn the_files_a_call_changes() {
        assert_eq!(
            changed_paths("write_file", r#"{"path":"a.txt","content":"x"}"#),
            ["a.txt"]
        );
        assert_eq!(
            changed_paths(
                "batch_patch",
                r#"{"patches":[{"path":"a"},{"path":"b"},{"path":"a"}]}"#
            ),
            ["a", "b"]
        );
        assert!(changed_paths("read_file", r#"{"path":"a"}"#).is_empty());
        assert!(changed_paths("patch", "not json").is_empty());
        assert_eq!(
            BATCH_READ.paths(&serde_json::json!({"files": [{"path": "x"}, {"nopath": 1}]})),
            ["x"]
        );
    }

    /// The web UI's table (`ui/js/emoji.js`) lists the emoji of every row that has one of its
    /// own, in the table's order.
    #[test]
    fn the_web_ui_mirrors_the_emoji_of_every_row() {
        let js = include_str!("../../ui/js/emoji.js");
        let mut mirrored: Vec<(String, String)> = Vec::new();
        let mut in_table = false;
        for line in js.lines().map(str::trim) {
            if line.starts_with("export const TOOL_EMOJI") {
                in_table = true;
                continue;
            }
            if in_table && line.starts_with('}') {
                in_table = false;
            }
            if in_table && let Some((k, v)) = line.trim_end_matches(',').split_once(':') {
                mirrored.push((k.trim().into(), v.trim().trim_matches('\'').into()));
            }
        }
        let ours: Vec<(String, String)> = TOOLS
            .iter()
            .filter_map(|r| Some((r.name.to_string(), r.emoji?.to_string())))
            .collect();
        assert_eq!(mirrored, ours, "ui/js/emoji.js differs from the tool table");
        assert!(js.contains(&format!("export const MCP_EMOJI = '{MCP_EMOJI}';")));
        assert!(js.contains(&format!("export const DEFAULT_EMOJI = '{DEFAULT_EMOJI}';")));
        assert!(js.contains(&format!("export const MCP_SEPARATOR = '{MCP_SEPARATOR}';")));
    }
}
