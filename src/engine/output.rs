//! Excerpts of messages for side calls (the cut of tool results is `text::head_and_tail`).

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
    let end = crate::text::floor_char_boundary(&m.content, max_bytes);
    out.push_str(&m.content[..end]);
    if end < m.content.len() {
        out.push('…');
    }
    out
}
