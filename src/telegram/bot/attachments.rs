//! Files both ways: a document or photo a user sends (saved, or an image part), and the
//! `MEDIA:` lines of an answer sent as files.

use std::sync::Arc;

use super::parts::Bot;
use super::turns::ChatTurn;
use crate::llm::Message;
use crate::telegram::error::SendError;
use crate::telegram::files;
use crate::telegram::outgoing;

impl Bot {
    /// A document or photo: fetched (≤ 20 MB), saved into the working directory under a name
    /// that replaces nothing, and named in the turn it starts (whose memory writes become
    /// pending: the file is external content).
    pub(super) async fn on_file(
        self: &Arc<Self>,
        chat: i64,
        file: files::Incoming,
        caption: Option<&str>,
    ) {
        if let Some(refusal) = self.no_turn_now(chat) {
            self.say(chat, &refusal).await;
            return;
        }
        let bytes = match self
            .api
            .download(&file.file_id, files::MAX_FILE_BYTES)
            .await
        {
            Ok(bytes) => bytes,
            Err(e) => {
                let text = format!("I could not fetch {}: {e}", file.name);
                self.say(chat, &text).await;
                return;
            }
        };
        // A photo goes to a model that takes images as an image part too (a picture it
        // cannot be is only saved, as for a model that does not).
        let image = (file.photo && self.runtime.config().images)
            .then(|| crate::prompt::image_part(&file.name, &bytes).ok())
            .flatten();
        let (dir, sent, size) = (
            self.runtime.cwd().to_path_buf(),
            file.name.clone(),
            bytes.len(),
        );
        let saved = tokio::task::spawn_blocking(move || files::save(&dir, &sent, &bytes))
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|r| r);
        match saved {
            Ok(saved) => {
                let text = files::turn_text(caption, &file.name, &saved, size, image.is_some());
                let mut input = Message::user(text);
                input.images.extend(image);
                let turn = ChatTurn {
                    external: vec!["telegram:file".into()],
                    ..ChatTurn::of(input)
                };
                self.start_turn_with(chat, turn).await;
            }
            Err(e) => {
                let text = format!("I could not save {}: {e}", file.name);
                self.say(chat, &text).await;
            }
        }
    }

    /// Sends an answer: its text, then the files its `MEDIA:` lines name (see
    /// [`outgoing`]); a file that cannot go is answered with why, in one message.
    pub(super) async fn deliver(&self, chat: i64, answer: &str) {
        let (text, media) = outgoing::take_media_lines(answer);
        if !text.is_empty() || media.is_empty() {
            self.reply(chat, &text).await;
        }
        let mut problems = Vec::new();
        for (n, line) in media.into_iter().enumerate() {
            if n >= outgoing::MAX_FILES_PER_ANSWER {
                problems.push(format!(
                    "Not sent: {} (at most {} files per answer).",
                    line.path,
                    outgoing::MAX_FILES_PER_ANSWER
                ));
                continue;
            }
            let cwd = self.runtime.cwd().to_path_buf();
            let redactor = self.runtime.redactor().clone();
            let path = line.path.clone();
            let read = tokio::task::spawn_blocking(move || {
                outgoing::read_for_sending(&cwd, &line, &redactor)
            })
            .await
            .unwrap_or_else(|e| Err(SendError::Stopped(e.to_string())));
            let sent = match read {
                Ok(file) => self
                    .api
                    .send_file(chat, &file)
                    .await
                    .map_err(SendError::Upload),
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                problems.push(format!("Could not send {path}: {e}"));
            }
        }
        if !problems.is_empty() {
            self.say(chat, &problems.join("\n")).await;
        }
    }
}
