//! How much of Unicode the terminal uses (chosen from the colour setting, the terminal and
//! the locale), and the line of a finished tool call in each of those modes.

use std::time::Duration;

use crate::cli::style::Style;

/// How much of Unicode the tool lines and the spinner use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Glyphs {
    /// A colour terminal that shows UTF-8: the status mark and the tool's emoji.
    Rich,
    /// No colour, or not a terminal: the status mark (✓ ✗), no emoji.
    Plain,
    /// A terminal whose locale is not UTF-8: ASCII only (`ok`, `failed`).
    Ascii,
}

impl Glyphs {
    /// The glyphs for stderr: `color` is the configuration's colour setting.
    pub fn choose(color: bool, stderr_tty: bool, utf8: bool) -> Glyphs {
        match (stderr_tty, utf8, color) {
            (true, false, _) => Glyphs::Ascii,
            (true, true, true) => Glyphs::Rich,
            _ => Glyphs::Plain,
        }
    }
}

/// What one finished tool call's line says.
pub(super) struct ToolLine<'a> {
    pub(super) name: &'a str,
    pub(super) ok: bool,
    pub(super) duration: Duration,
    pub(super) error: Option<&'a str>,
    pub(super) summary: &'a str,
}

/// `  ✓ 📋 plan create 0.0s` (rich), `  ✓ plan create 0.0s` (plain) or
/// `  ok plan create 0.0s` (ASCII); a failure adds `— <error>`.
pub(super) fn tool_line(s: Style, glyphs: Glyphs, call: ToolLine<'_>) -> String {
    let ascii = glyphs == Glyphs::Ascii;
    let mark = match (call.ok, ascii) {
        (true, false) => s.green("✓"),
        (false, false) => s.red("✗"),
        (true, true) => "ok".to_string(),
        (false, true) => "failed".to_string(),
    };
    let mut line = format!("  {mark} ");
    if glyphs == Glyphs::Rich {
        line.push_str(crate::tools::catalog::tool_emoji(call.name));
        line.push(' ');
    }
    let summary = shorten(call.summary, 80);
    let summary = if ascii { to_ascii(&summary) } else { summary };
    let name = shorten(call.name, 80);
    line.push_str(&format!("{} {summary}", s.cyan(&name)));
    line.push_str(&s.dim(&format!(" {:.1}s", call.duration.as_secs_f64())));
    if let Some(e) = call.error {
        let e = shorten(e, 120);
        let text = if ascii {
            format!("- {}", to_ascii(&e))
        } else {
            format!("— {e}")
        };
        line.push_str(&format!(" {}", s.red(&text)));
    }
    line
}

/// Non-ASCII characters as `?`, for terminals that cannot show them.
pub(super) fn to_ascii(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii() { c } else { '?' })
        .collect()
}

/// The first line of `s` in at most `max` characters in all, its control characters shown
/// ([`crate::text::visible`]): file names, commands and errors reach the terminal as text.
pub(super) fn shorten(s: &str, max: usize) -> String {
    let first = crate::text::visible(s.lines().next().unwrap_or(""), false);
    crate::text::fit(&first, max).into_owned()
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
    fn locale_detection() {
        assert!(locale_is_utf8(None, None, None));
        assert!(locale_is_utf8(None, None, Some("en_US.UTF-8")));
        assert!(locale_is_utf8(Some("C.utf8"), None, Some("C")));
        assert!(!locale_is_utf8(Some("C"), None, Some("en_US.UTF-8")));
        assert!(!locale_is_utf8(None, Some("POSIX"), None));
        assert!(!locale_is_utf8(Some(""), None, Some("de_DE.ISO-8859-1")));
    }

    fn call<'a>(name: &'a str, ok: bool, error: Option<&'a str>) -> ToolLine<'a> {
        ToolLine {
            name,
            ok,
            duration: Duration::from_millis(40),
            error,
            summary: "create “Ship it”",
        }
    }

    #[test]
    fn glyphs_follow_colour_terminal_and_locale() {
        assert_eq!(Glyphs::choose(true, true, true), Glyphs::Rich);
        assert_eq!(Glyphs::choose(false, true, true), Glyphs::Plain);
        assert_eq!(Glyphs::choose(true, false, true), Glyphs::Plain);
        assert_eq!(Glyphs::choose(true, false, false), Glyphs::Plain);
        assert_eq!(Glyphs::choose(true, true, false), Glyphs::Ascii);
        assert_eq!(Glyphs::choose(false, true, false), Glyphs::Ascii);
    }

    #[test]
    fn tool_lines_in_each_mode() {
        let off = Style::new(false);
        assert_eq!(
            tool_line(off, Glyphs::Rich, call("plan", true, None)),
            "  ✓ 📋 plan create “Ship it” 0.0s"
        );
        assert_eq!(
            tool_line(off, Glyphs::Rich, call("fetch", true, None)),
            "  ✓ 🔧 fetch create “Ship it” 0.0s"
        );
        assert_eq!(
            tool_line(off, Glyphs::Plain, call("plan", true, None)),
            "  ✓ plan create “Ship it” 0.0s"
        );
        assert_eq!(
            tool_line(
                off,
                Glyphs::Ascii,
                call("shell", false, Some("exit 1 — boom"))
            ),
            "  failed shell create ?Ship it? 0.0s - exit 1 ? boom"
        );
        let colour = tool_line(Style::new(true), Glyphs::Rich, call("shell", true, None));
        assert!(colour.contains("💻 \x1b[36mshell\x1b[0m"), "{colour:?}");
    }
}
