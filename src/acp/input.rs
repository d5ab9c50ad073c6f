//! A prompt's content blocks as the turn's user message: text as typed, resource links as
//! references the model can read, embedded resources as attached files (wrapped as the
//! untrusted content they are, as `odek serve`'s attachments), images as image parts when the
//! model takes them.

use serde_json::Value;

use super::rpc::RpcError;
use crate::llm::{ImagePart, Message};
use crate::prompt::ContextFile;

/// What a prompt becomes.
pub(crate) struct Input {
    /// The user message.
    pub message: Message,
    /// The session's name when it has none: the prompt's first line.
    pub title: String,
    /// Where its external content came from (the turn's memory writes wait).
    pub external: Vec<String>,
}

/// The user message of `blocks`; `images` says whether the model takes images.
pub(crate) fn message(blocks: &[Value], images: bool) -> Result<Input, RpcError> {
    let mut text = String::new();
    let mut files: Vec<ContextFile> = Vec::new();
    let mut pictures: Vec<(String, ImagePart)> = Vec::new();
    let mut budget = crate::prompt::ImageBudget::default();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => push_paragraph(&mut text, str_field(block, "text")?),
            Some("resource_link") => {
                let name = str_field(block, "name")?;
                let uri = str_field(block, "uri")?;
                push_paragraph(&mut text, &format!("[{name}]({})", shown_uri(uri)));
            }
            Some("resource") => {
                let resource = block
                    .get("resource")
                    .ok_or_else(|| invalid("a resource block needs \"resource\""))?;
                let uri = str_field(resource, "uri")?;
                match (resource.get("text"), resource.get("blob")) {
                    (Some(Value::String(body)), _) => files.push(ContextFile {
                        name: shown_uri(uri).to_string(),
                        text: body.clone(),
                    }),
                    _ => {
                        return Err(invalid(format!(
                            "resource {uri}: odek takes embedded resources as text only"
                        )));
                    }
                }
            }
            Some("image") => {
                if !images {
                    return Err(invalid("the model does not take images (setting `images`)"));
                }
                let name = block
                    .get("uri")
                    .and_then(Value::as_str)
                    .map_or("image", shown_uri)
                    .to_string();
                let bytes = base64_bytes(str_field(block, "data")?)
                    .ok_or_else(|| invalid(format!("image {name}: data is not base64")))?;
                let part = budget
                    .part(&name, &bytes)
                    .map_err(|e| invalid(e.to_string()))?;
                pictures.push((name, part));
            }
            Some(other) => {
                return Err(invalid(format!(
                    "odek acp takes text, resource_link, resource and image blocks, not {other}"
                )));
            }
            None => return Err(invalid("a content block needs a \"type\"")),
        }
    }
    if text.trim().is_empty() && files.is_empty() && pictures.is_empty() {
        return Err(invalid("the prompt is empty"));
    }
    let title = crate::text::fit(text.trim().lines().next().unwrap_or(""), 200).into_owned();
    let external = if files.is_empty() && pictures.is_empty() {
        Vec::new()
    } else {
        vec!["attachment".to_string()]
    };
    let mut message = Message::user(crate::prompt::with_attached_files(
        &text,
        &files,
        "attachment",
    ));
    crate::prompt::attach_images(&mut message, pictures);
    Ok(Input {
        message,
        title,
        external,
    })
}

fn push_paragraph(text: &mut String, piece: &str) {
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(piece);
}

/// A `file://` URI as its path; any other as it is.
fn shown_uri(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

fn str_field<'a>(value: &'a Value, field: &str) -> Result<&'a str, RpcError> {
    value
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("a content block needs \"{field}\", a string")))
}

fn invalid(message: impl Into<String>) -> RpcError {
    RpcError::invalid_params(message)
}

fn base64_bytes(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_links_and_embedded_files_make_one_message() {
        let input = message(
            &[
                json!({"type": "text", "text": "Explain this"}),
                json!({"type": "resource_link", "name": "main.rs", "uri": "file:///w/src/main.rs"}),
                json!({"type": "resource", "resource": {"uri": "file:///w/notes.md", "text": "hello"}}),
            ],
            false,
        )
        .expect("input");
        assert_eq!(input.title, "Explain this");
        assert_eq!(input.external, ["attachment"]);
        let text = &input.message.content;
        assert!(
            text.starts_with("Explain this\n\n[main.rs](/w/src/main.rs)"),
            "{text}"
        );
        assert!(text.contains("--- /w/notes.md ---"), "{text}");
        assert!(text.contains("hello"), "{text}");
    }

    #[test]
    fn images_audio_and_empty_prompts_are_refused_with_reasons() {
        let image = json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="});
        let refused = |blocks: &[Value], images: bool| match message(blocks, images) {
            Err(e) => e.message,
            Ok(_) => panic!("taken: {blocks:?}"),
        };
        assert!(refused(std::slice::from_ref(&image), false).contains("does not take images"));
        assert!(refused(&[json!({"type": "audio", "data": ""})], true).contains("not audio"));
        assert!(refused(&[json!({"type": "text", "text": "  "})], true).contains("empty"));
        assert!(refused(&[json!({"text": "x"})], true).contains("\"type\""));
        let bad = json!({"type": "image", "mimeType": "image/png", "data": "%%%"});
        assert!(refused(&[bad], true).contains("not base64"));
    }
}
