//! The Bot API over the process's HTTP client: the methods odek calls (`getUpdates`,
//! `sendMessage`, `editMessageText`, `answerCallbackQuery`, `getFile` and the file download) with typed parameters, and of
//! the answers only the fields odek reads (everything else is skipped, not decoded). A
//! crate that types the whole API cost 1.1 MiB of binary and decoded every field of every
//! update (docs/PERFORMANCE.md, "Weight"). Sent by our `reqwest` (one TLS stack, the system's
//! roots). Errors never carry the URL, which holds the token.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Why a Bot API call failed.
#[derive(Debug, thiserror::Error)]
pub enum BotError {
    /// Telegram answered with an error (`ok: false`).
    #[error("Telegram: {description} ({code})")]
    Api {
        /// HTTP-like error code (400, 401, 403, 429, …).
        code: u16,
        /// Telegram's description, e.g. `Bad Request: can't parse entities: …`.
        description: String,
        /// Seconds to wait before the next call (429 only).
        retry_after: Option<u64>,
    },
    /// The request did not get an answer (connection refused or dropped, timeout).
    #[error("Telegram unreachable: {0}")]
    Network(String),
    /// An answer that is not the Bot API's JSON.
    #[error("Telegram answered something unreadable: {0}")]
    Decode(String),
}

impl crate::error::Classified for BotError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Remote
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            BotError::Network(_) => Some("check the connection to api.telegram.org"),
            BotError::Api { .. } | BotError::Decode(_) => None,
        }
    }
}

impl BotError {
    /// True for Telegram's refusal of MarkdownV2 it cannot parse.
    pub fn is_markup_error(&self) -> bool {
        matches!(self, BotError::Api { code: 400, description, .. }
            if description.contains("can't parse entities"))
    }

    /// How long to wait before trying again, when trying again can help.
    pub fn retry_delay(&self) -> Option<Duration> {
        match self {
            BotError::Api {
                retry_after: Some(s),
                ..
            } => Some(Duration::from_secs(*s)),
            BotError::Api { code, .. } if *code >= 500 => Some(Duration::from_secs(1)),
            BotError::Network(_) => Some(Duration::from_secs(1)),
            _ => None,
        }
    }
}

/// Tries of one `sendMessage` when Telegram asks to wait or cannot be reached.
pub const SEND_ATTEMPTS: u32 = 5;

/// `call`, tried again (up to [`SEND_ATTEMPTS`] in all, waiting longer each time) when
/// Telegram asks to wait (429), fails (5xx) or cannot be reached.
async fn retrying<T, F, Fut>(mut call: F) -> Result<T, BotError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, BotError>>,
{
    let mut attempt = 1;
    loop {
        match call().await {
            Ok(value) => return Ok(value),
            Err(e) => match e.retry_delay() {
                Some(wait) if attempt < SEND_ATTEMPTS => {
                    tokio::time::sleep(wait * attempt).await;
                    attempt += 1;
                }
                _ => return Err(e),
            },
        }
    }
}

/// How long one file upload may take (20 MiB on a slow uplink).
pub const UPLOAD_TIMEOUT: Duration = Duration::from_secs(300);
/// A raw piece of an answer: its MarkdownV2 (escapes at most double it) still fits the cap.
pub const RAW_PIECE_UNITS: usize = (super::text::MAX_MESSAGE_UNITS - 8) / 2;

/// The error answer of the Bot API.
#[derive(Deserialize)]
struct ErrorAnswer {
    #[serde(default)]
    error_code: u16,
    #[serde(default)]
    description: String,
    #[serde(default)]
    parameters: Option<ErrorParameters>,
}

#[derive(Deserialize)]
struct ErrorParameters {
    retry_after: Option<u64>,
}

/// One bot: `<api_base>/bot<token>/<method>`.
#[derive(Clone)]
pub struct BotApi {
    client: reqwest::Client,
    url: String,
    /// `<api_base>/file/bot<token>`: where `getFile`'s paths are downloaded from.
    file_url: String,
}

impl std::fmt::Debug for BotApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BotApi { … }")
    }
}

impl BotApi {
    /// A client for the bot with `token` at `api_base`; `poll_timeout` is the long poll's
    /// wait, so requests may take that long plus a margin.
    pub fn new(api_base: &str, token: &str, poll_timeout: Duration) -> Result<BotApi, BotError> {
        let client = crate::llm::http::client_builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(poll_timeout + Duration::from_secs(15))
            .build()
            .map_err(|e| BotError::Network(e.without_url().to_string()))?;
        let base = api_base.trim_end_matches('/');
        Ok(BotApi {
            client,
            url: format!("{base}/bot{token}"),
            file_url: format!("{base}/file/bot{token}"),
        })
    }

    async fn post(&self, method: &str, body: Option<String>) -> Result<String, BotError> {
        let mut request = self
            .client
            .post(format!("{}/{method}", self.url))
            .header("Content-Type", "application/json");
        if let Some(body) = body {
            request = request.body(body);
        }
        self.answer_of(request).await
    }

    /// Sends a request and reads its answer: the body of a success, else the API's error.
    async fn answer_of(&self, request: reqwest::RequestBuilder) -> Result<String, BotError> {
        let response = request
            .send()
            .await
            .map_err(|e| BotError::Network(e.without_url().to_string()))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| BotError::Network(e.without_url().to_string()))?;
        if status.is_success() {
            return Ok(text);
        }
        match serde_json::from_str::<ErrorAnswer>(&text) {
            Ok(e) => Err(BotError::Api {
                code: if e.error_code == 0 {
                    status.as_u16()
                } else {
                    e.error_code
                },
                description: e.description,
                retry_after: e.parameters.and_then(|p| p.retry_after),
            }),
            Err(_) => Err(BotError::Api {
                code: status.as_u16(),
                description: format!("HTTP {status}"),
                retry_after: None,
            }),
        }
    }
}

impl BotApi {
    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<T, BotError> {
        let body = serde_json::to_string(params).map_err(|e| BotError::Decode(e.to_string()))?;
        let text = self.post(method, Some(body)).await?;
        serde_json::from_str::<Answer<T>>(&text)
            .map(|a| a.result)
            .map_err(|e| BotError::Decode(e.to_string()))
    }

    /// `getUpdates`: messages and button presses after `offset`, waiting up to `timeout`
    /// seconds for the first.
    pub async fn get_updates(&self, offset: i64, timeout: u32) -> Result<Vec<Update>, BotError> {
        let params = GetUpdates {
            offset,
            timeout,
            allowed_updates: &["message", "callback_query"],
        };
        self.call("getUpdates", &params).await
    }

    /// `sendMessage`; returns the new message's id.
    pub async fn send_message(&self, params: &SendMessage<'_>) -> Result<i32, BotError> {
        let sent: MessageId = self.call("sendMessage", params).await?;
        Ok(sent.message_id)
    }

    /// `sendMessage`, tried again (up to [`SEND_ATTEMPTS`] in all, waiting longer each time)
    /// when Telegram asks to wait (429), fails (5xx) or cannot be reached.
    pub async fn send_retrying(&self, params: &SendMessage<'_>) -> Result<i32, BotError> {
        retrying(|| self.send_message(params)).await
    }

    /// An answer (already redacted) to `chat`, in pieces under Telegram's cap: MarkdownV2
    /// (code kept as code), or the plain piece when Telegram refuses the markup. Each piece
    /// is tried again as [`Self::send_retrying`] does; the first other error ends it.
    pub async fn send_answer(&self, chat: i64, text: &str) -> Result<(), BotError> {
        self.send_answer_with(chat, text, true, &mut 0).await
    }

    async fn send(&self, params: &SendMessage<'_>, retrying: bool) -> Result<i32, BotError> {
        if retrying {
            self.send_retrying(params).await
        } else {
            self.send_message(params).await
        }
    }

    async fn send_answer_with(
        &self,
        chat: i64,
        text: &str,
        retrying: bool,
        sent: &mut usize,
    ) -> Result<(), BotError> {
        use super::text::{MAX_MESSAGE_UNITS, answer_markdown, split, utf16_len};
        let text = if text.trim().is_empty() {
            "(no answer)"
        } else {
            text
        };
        for piece in split(text, RAW_PIECE_UNITS).into_iter().skip(*sent) {
            let markdown = answer_markdown(&piece);
            if utf16_len(&markdown) <= MAX_MESSAGE_UNITS {
                let params = SendMessage {
                    chat_id: chat,
                    text: &markdown,
                    parse_mode: Some(ParseMode::MarkdownV2),
                    reply_markup: None,
                };
                match self.send(&params, retrying).await {
                    Ok(_) => {
                        *sent += 1;
                        continue;
                    }
                    Err(e) if e.is_markup_error() => {
                        tracing::warn!("Telegram refused the markup ({e}); sending plain text");
                    }
                    Err(e) => return Err(e),
                }
            }
            let plain = SendMessage {
                chat_id: chat,
                text: &piece,
                parse_mode: None,
                reply_markup: None,
            };
            self.send(&plain, retrying).await?;
            *sent += 1;
        }
        Ok(())
    }

    /// `editMessageText`.
    pub async fn edit_message_text(&self, params: &EditMessageText<'_>) -> Result<(), BotError> {
        let _: serde::de::IgnoredAny = self.call("editMessageText", params).await?;
        Ok(())
    }

    /// `answerCallbackQuery` (the toast a button press shows).
    pub async fn answer_callback_query(&self, id: &str, text: &str) -> Result<(), BotError> {
        let params = AnswerCallbackQuery {
            callback_query_id: id,
            text,
        };
        let _: serde::de::IgnoredAny = self.call("answerCallbackQuery", &params).await?;
        Ok(())
    }
}

/// A successful answer: `{"ok": true, "result": …}`.
#[derive(Deserialize)]
struct Answer<T> {
    result: T,
}

#[derive(Serialize)]
struct GetUpdates {
    offset: i64,
    timeout: u32,
    allowed_updates: &'static [&'static str],
}

/// How Telegram reads a message's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ParseMode {
    /// Telegram's MarkdownV2.
    MarkdownV2,
}

/// `sendMessage`'s parameters.
#[derive(Debug, Serialize)]
pub struct SendMessage<'a> {
    /// The chat.
    pub chat_id: i64,
    /// The text.
    pub text: &'a str,
    /// Markup, when there is some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parse_mode: Option<ParseMode>,
    /// Buttons under it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_markup: Option<&'a InlineKeyboard>,
}

/// `editMessageText`'s parameters.
#[derive(Debug, Serialize)]
pub struct EditMessageText<'a> {
    /// The chat.
    pub chat_id: i64,
    /// The message.
    pub message_id: i32,
    /// Its new text.
    pub text: &'a str,
    /// Its new buttons (none: the buttons go).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_markup: Option<&'a InlineKeyboard>,
}

#[derive(Serialize)]
struct AnswerCallbackQuery<'a> {
    callback_query_id: &'a str,
    text: &'a str,
}

/// Buttons under a message, in rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InlineKeyboard {
    /// The rows.
    pub inline_keyboard: Vec<Vec<Button>>,
}

/// One button: its label and the data its press sends back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Button {
    /// The label.
    pub text: String,
    /// What a press sends back (`ap:<approval id>:y|n`).
    pub callback_data: String,
}

#[derive(Deserialize)]
struct MessageId {
    message_id: i32,
}

/// What `getFile` answers.
#[derive(Debug, Deserialize)]
struct TgFile {
    #[serde(default)]
    file_path: Option<String>,
    #[serde(default)]
    file_size: Option<u64>,
}

#[derive(Serialize)]
struct GetFile<'a> {
    file_id: &'a str,
}

impl BotApi {
    /// Sends a file (`sendDocument` or `sendPhoto`, a multipart upload) to `chat`, tried
    /// again like [`Self::send_retrying`] (429, 5xx, unreachable); each upload may take up to
    /// [`UPLOAD_TIMEOUT`].
    pub async fn send_file(&self, chat: i64, file: &OutgoingFile) -> Result<(), BotError> {
        let (method, field) = file.kind.method_and_field();
        retrying(|| {
            let part =
                reqwest::multipart::Part::bytes(file.bytes.clone()).file_name(file.name.clone());
            let form = reqwest::multipart::Form::new()
                .text("chat_id", chat.to_string())
                .part(field, part);
            let request = self
                .client
                .post(format!("{}/{method}", self.url))
                .timeout(UPLOAD_TIMEOUT)
                .multipart(form);
            self.answer_of(request)
        })
        .await
        .map(|_| ())
    }

    /// Downloads a file a user sent (`getFile`, then its path), at most `max` bytes: a larger
    /// one is refused before or while it is read.
    pub async fn download(&self, file_id: &str, max: u64) -> Result<Vec<u8>, BotError> {
        let file: TgFile = self.call("getFile", &GetFile { file_id }).await?;
        let too_large = |size: u64| BotError::Api {
            code: 413,
            description: format!("the file is {size} bytes, over the {max}-byte limit"),
            retry_after: None,
        };
        if let Some(size) = file.file_size.filter(|s| *s > max) {
            return Err(too_large(size));
        }
        let path = file
            .file_path
            .ok_or_else(|| BotError::Decode("getFile answered no file_path".into()))?;
        let mut response = self
            .client
            .get(format!("{}/{path}", self.file_url))
            .send()
            .await
            .map_err(|e| BotError::Network(e.without_url().to_string()))?;
        if !response.status().is_success() {
            let status = response.status();
            return Err(BotError::Api {
                code: status.as_u16(),
                description: format!("the file could not be fetched (HTTP {status})"),
                retry_after: None,
            });
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| BotError::Network(e.without_url().to_string()))?
        {
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > max {
                return Err(too_large(bytes.len() as u64));
            }
        }
        Ok(bytes)
    }
}

/// A file a user sent as a document.
#[derive(Debug, Clone, Deserialize)]
pub struct Document {
    /// What `getFile` takes.
    pub file_id: String,
    /// Its name on the sender's side.
    #[serde(default)]
    pub file_name: Option<String>,
    /// Its size, when Telegram says.
    #[serde(default)]
    pub file_size: Option<u64>,
}

/// One size of a photo a user sent.
#[derive(Debug, Clone, Deserialize)]
pub struct PhotoSize {
    /// What `getFile` takes.
    pub file_id: String,
    /// Its size, when Telegram says.
    #[serde(default)]
    pub file_size: Option<u64>,
    /// Width × height in pixels.
    #[serde(default)]
    pub width: u32,
    /// Height in pixels.
    #[serde(default)]
    pub height: u32,
}

/// Decodes a `getUpdates` answer as the bot does (fuzzing entry).
#[cfg(any(fuzzing, test))]
pub fn decode_updates(data: &[u8]) -> Result<Vec<Update>, BotError> {
    serde_json::from_slice::<Answer<Vec<Update>>>(data)
        .map(|a| a.result)
        .map_err(|e| BotError::Decode(e.to_string()))
}

/// One update: a message or a button press (other kinds are not asked for).
#[derive(Debug, Deserialize)]
pub struct Update {
    /// Its position; the next poll asks from after it.
    pub update_id: i64,
    /// A message.
    #[serde(default)]
    pub message: Option<Message>,
    /// A button press.
    #[serde(default)]
    pub callback_query: Option<CallbackQuery>,
}

/// A message, as far as odek reads it.
#[derive(Debug, Deserialize)]
pub struct Message {
    /// The chat.
    pub chat: Chat,
    /// Who sent it.
    #[serde(default)]
    pub from: Option<User>,
    /// Its text.
    #[serde(default)]
    pub text: Option<String>,
    /// The caption of a document or photo.
    #[serde(default)]
    pub caption: Option<String>,
    /// A file sent as a document.
    #[serde(default)]
    pub document: Option<Document>,
    /// A photo, in the sizes Telegram made of it (largest last).
    #[serde(default)]
    pub photo: Vec<PhotoSize>,
}

/// A chat.
#[derive(Debug, Deserialize)]
pub struct Chat {
    /// Its id.
    pub id: i64,
}

/// A user.
#[derive(Debug, Deserialize)]
pub struct User {
    /// Its id.
    pub id: i64,
    /// `@username`, when set.
    #[serde(default)]
    pub username: Option<String>,
    /// The first name.
    #[serde(default)]
    pub first_name: String,
}

/// A button press.
#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    /// Its id (for the answer).
    pub id: String,
    /// Who pressed.
    pub from: User,
    /// The message the button is under (an inaccessible one still names its chat).
    #[serde(default)]
    pub message: Option<Message>,
    /// The button's data.
    #[serde(default)]
    pub data: Option<String>,
}

/// Scheduled answers delivered to Telegram (`--deliver telegram[:CHAT]`): one try per
/// piece, the caller tries again itself ([`crate::schedule::deliver::Delivery`]).
#[async_trait::async_trait]
impl crate::schedule::deliver::ChatDelivery for BotApi {
    async fn send_once(
        &self,
        chat: i64,
        answer: &str,
        sent: &mut usize,
    ) -> Result<(), crate::schedule::ChatFailure> {
        self.send_answer_with(chat, answer, false, sent)
            .await
            .map_err(|e| crate::schedule::ChatFailure {
                retry_after: match &e {
                    BotError::Api {
                        retry_after: Some(s),
                        ..
                    } => Some(Duration::from_secs(*s)),
                    _ => None,
                },
                error: Box::new(e),
            })
    }
}

/// How a file goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    /// `sendDocument`.
    Document,
    /// `sendPhoto`.
    Photo,
}

impl MediaKind {
    /// The Bot API method and the name of its file field.
    pub fn method_and_field(self) -> (&'static str, &'static str) {
        match self {
            MediaKind::Document => ("sendDocument", "document"),
            MediaKind::Photo => ("sendPhoto", "photo"),
        }
    }
}

/// A file read and ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingFile {
    /// How it goes (a photo over [`super::outgoing::MAX_PHOTO_BYTES`] goes as a document).
    pub kind: MediaKind,
    /// Its name: the path's last segment.
    pub name: String,
    /// Its bytes (a UTF-8 file redacted).
    pub bytes: Vec<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_decode_only_what_odek_reads_and_parameters_encode_as_the_api_wants() {
        let text = r#"{"ok":true,"result":[
            {"update_id":7,"message":{"message_id":3,"date":1,"chat":{"id":-100,"type":"group","title":"t"},
             "from":{"id":42,"is_bot":false,"first_name":"Ann","username":"ann"},"text":"hi",
             "entities":[{"type":"bold","offset":0,"length":2}],"sticker":{"file_id":"x"}}},
            {"update_id":8,"callback_query":{"id":"q1","from":{"id":42,"first_name":"Ann"},
             "message":{"message_id":9,"date":0,"chat":{"id":-100}},"data":"ap:a1:y","chat_instance":"c"}},
            {"update_id":9,"edited_message":{"message_id":1}}
        ]}"#;
        let updates: Answer<Vec<Update>> = serde_json::from_str(text).expect("decodes");
        let [first, second, third] = &updates.result[..] else {
            panic!("three updates");
        };
        let m = first.message.as_ref().expect("message");
        assert_eq!((m.chat.id, m.text.as_deref()), (-100, Some("hi")));
        assert_eq!(
            m.from.as_ref().and_then(|u| u.username.as_deref()),
            Some("ann")
        );
        let q = second.callback_query.as_ref().expect("press");
        assert_eq!(q.message.as_ref().map(|m| m.chat.id), Some(-100));
        assert_eq!(q.data.as_deref(), Some("ap:a1:y"));
        assert!(third.message.is_none() && third.callback_query.is_none());
        let keyboard = InlineKeyboard {
            inline_keyboard: vec![vec![Button {
                text: "✅".into(),
                callback_data: "ap:a1:y".into(),
            }]],
        };
        let send = SendMessage {
            chat_id: 5,
            text: "x",
            parse_mode: Some(ParseMode::MarkdownV2),
            reply_markup: Some(&keyboard),
        };
        assert_eq!(
            serde_json::to_value(&send).expect("json"),
            serde_json::json!({"chat_id": 5, "text": "x", "parse_mode": "MarkdownV2",
                "reply_markup": {"inline_keyboard": [[{"text": "✅", "callback_data": "ap:a1:y"}]]}})
        );
    }
}
