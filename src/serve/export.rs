//! A session as Markdown (`GET /api/sessions/{id}/export?format=md`): a header with its
//! metadata, then one section per message; tool calls and results in code fences long
//! enough never to be closed by the text they hold.

use std::fmt::Write;

use crate::llm::Role;
use crate::session::Session;

/// The whole session as Markdown.
pub fn markdown(s: &Session) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", s.summary().title);
    let _ = writeln!(out, "- Session: `{}`", s.id);
    let _ = writeln!(out, "- Model: {}", s.model);
    let _ = writeln!(out, "- Created: {}", s.created_at);
    let _ = writeln!(out, "- Updated: {}", s.updated_at);
    let _ = writeln!(out, "- Turns: {}", s.turns);
    let _ = writeln!(
        out,
        "- Tokens: {} in, {} out\n",
        s.input_tokens, s.output_tokens
    );
    for m in &s.messages {
        match m.role {
            Role::System => {
                let _ = writeln!(out, "## System\n\n{}\n", fenced(&m.content, "text"));
            }
            Role::User => {
                let _ = writeln!(out, "## User\n\n{}\n", m.content);
                if !m.images.is_empty() {
                    let _ = writeln!(out, "*[{} image(s) attached]*\n", m.images.len());
                }
            }
            Role::Assistant => {
                let _ = writeln!(out, "## Assistant\n");
                if !m.content.is_empty() {
                    let _ = writeln!(out, "{}\n", m.content);
                }
                for call in &m.tool_calls {
                    let _ = writeln!(
                        out,
                        "**Tool call** `{}`\n\n{}\n",
                        call.function.name,
                        fenced(&call.function.arguments, "json")
                    );
                }
            }
            Role::Tool => {
                let name = m.name.as_deref().unwrap_or("tool");
                let _ = writeln!(
                    out,
                    "## Tool result (`{name}`)\n\n{}\n",
                    fenced(&m.content, "text")
                );
            }
        }
    }
    out
}

/// `text` in a backtick fence one longer than its longest backtick run (at least three).
fn fenced(text: &str, lang: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}{lang}\n{text}\n{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_is_never_closed_by_the_text() {
        assert_eq!(fenced("a", "text"), "```text\na\n```");
        assert_eq!(fenced("x ```` y", "text"), "`````text\nx ```` y\n`````");
    }
}
