//! The one tool → emoji table, used by the terminal's tool lines and mirrored by the web UI
//! (`ui/js/emoji.js`; a test keeps the two equal).

/// Built-in tools with their own emoji.
pub const TOOL_EMOJI: &[(&str, &str)] = &[
    ("read_file", "📖"),
    ("write_file", "📝"),
    ("patch", "🩹"),
    ("search_files", "🔍"),
    ("shell", "💻"),
    ("plan", "📋"),
    ("glob", "📂"),
    ("batch_read", "📚"),
    ("batch_patch", "🧩"),
    ("web_fetch", "🌐"),
    ("web_search", "🔎"),
    ("clarify", "❓"),
    ("delegate_tasks", "🤝"),
];

/// Tools from MCP servers, named `<server>__<tool>`.
pub const MCP_EMOJI: &str = "🔌";

/// Every other tool.
pub const DEFAULT_EMOJI: &str = "🔧";

/// The separator between an MCP server's name and its tool's name.
pub const MCP_SEPARATOR: &str = "__";

/// The emoji shown beside a call of `tool`.
pub fn tool_emoji(tool: &str) -> &'static str {
    if let Some((_, emoji)) = TOOL_EMOJI.iter().find(|(name, _)| *name == tool) {
        return emoji;
    }
    if tool.contains(MCP_SEPARATOR) {
        return MCP_EMOJI;
    }
    DEFAULT_EMOJI
}

/// True when a terminal whose locale is described by these variables (`LC_ALL`, then
/// `LC_CTYPE`, then `LANG`, the first one set and non-empty) shows UTF-8. With none set the
/// terminal is assumed to be UTF-8, as nearly every terminal today is.
pub fn locale_is_utf8(lc_all: Option<&str>, lc_ctype: Option<&str>, lang: Option<&str>) -> bool {
    let chosen = [lc_all, lc_ctype, lang]
        .into_iter()
        .flatten()
        .find(|v| !v.is_empty());
    match chosen {
        None => true,
        Some(locale) => {
            let l = locale.to_ascii_lowercase();
            l.contains("utf-8") || l.contains("utf8")
        }
    }
}

/// [`locale_is_utf8`] for this process's environment.
pub fn process_locale_is_utf8() -> bool {
    let var = |k: &str| std::env::var(k).ok();
    locale_is_utf8(
        var("LC_ALL").as_deref(),
        var("LC_CTYPE").as_deref(),
        var("LANG").as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lookup_mcp_and_default() {
        assert_eq!(tool_emoji("plan"), "📋");
        assert_eq!(tool_emoji("read_file"), "📖");
        assert_eq!(tool_emoji("shell"), "💻");
        assert_eq!(tool_emoji("everything__echo"), "🔌");
        assert_eq!(tool_emoji("todo"), "🔧");
        assert_eq!(tool_emoji(""), "🔧");
    }

    #[test]
    fn locale_detection() {
        assert!(locale_is_utf8(None, None, None));
        assert!(locale_is_utf8(None, None, Some("en_US.UTF-8")));
        assert!(locale_is_utf8(Some("C.utf8"), None, Some("C")));
        assert!(!locale_is_utf8(Some("C"), None, Some("en_US.UTF-8")));
        assert!(!locale_is_utf8(None, Some("POSIX"), None));
        assert!(!locale_is_utf8(Some(""), None, Some("de_DE.ISO-8859-1")));
    }

    /// The web UI's table (`ui/js/emoji.js`) says exactly what this one says.
    #[test]
    fn web_ui_mirror_matches() {
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
        let ours: Vec<(String, String)> = TOOL_EMOJI
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(mirrored, ours, "ui/js/emoji.js differs from TOOL_EMOJI");
        assert!(js.contains(&format!("export const MCP_EMOJI = '{MCP_EMOJI}';")));
        assert!(js.contains(&format!("export const DEFAULT_EMOJI = '{DEFAULT_EMOJI}';")));
        assert!(js.contains(&format!("export const MCP_SEPARATOR = '{MCP_SEPARATOR}';")));
    }
}
