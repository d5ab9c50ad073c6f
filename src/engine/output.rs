//! Shaping tool output before the model sees it: redaction, truncation and the untrusted
//! wrapper.

pub use crate::text::{ceil_char_boundary, floor_char_boundary};
pub use crate::tools::MAX_TOOL_OUTPUT_BYTES;

/// Keeps the first 3072 and last 1024 bytes (on UTF-8 boundaries) of outputs over 4096 bytes,
/// with a line saying how much was left out.
pub fn truncate_output(text: &str) -> std::borrow::Cow<'_, str> {
    crate::text::head_and_tail(text, MAX_TOOL_OUTPUT_BYTES)
}

/// One message as a `role [called tools: …]: text` line for a side call's input, its text cut
/// to `max_bytes` (on a character boundary) with `…` when longer.
pub fn excerpt_line(m: &crate::llm::Message, max_bytes: usize) -> String {
    let mut out = String::from(m.role.as_str());
    if !m.tool_calls.is_empty() {
        let names: Vec<&str> = m
            .tool_calls
            .iter()
            .map(|c| c.function.name.as_str())
            .collect();
        out.push_str(&format!(" [called tools: {}]", names.join(", ")));
    }
    out.push_str(": ");
    let end = floor_char_boundary(&m.content, max_bytes);
    out.push_str(&m.content[..end]);
    if end < m.content.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_untouched() {
        assert_eq!(truncate_output("abc"), "abc");
        let exact = "x".repeat(MAX_TOOL_OUTPUT_BYTES);
        assert_eq!(truncate_output(&exact).len(), MAX_TOOL_OUTPUT_BYTES);
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        let text = format!(
            "{}{}{}",
            "h".repeat(3072),
            "m".repeat(5000),
            "t".repeat(1024)
        );
        let out = truncate_output(&text);
        assert!(out.starts_with(&"h".repeat(3072)));
        assert!(out.ends_with(&"t".repeat(1024)));
        assert!(out.contains("... [5000 bytes omitted — output was 9096 bytes total] ..."));
    }

    #[test]
    fn multibyte_boundaries_are_respected() {
        let text = "é".repeat(5000);
        let out = truncate_output(&text);
        assert!(out.len() < text.len());
        assert!(out.starts_with('é') && out.ends_with('é'));
    }
}
