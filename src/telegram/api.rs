//! The Bot API over the process's HTTP client: frankenstein's typed methods and parameters,
//! sent by our `reqwest` (one TLS stack, the system's roots). Errors never carry the URL,
//! which holds the token.

use std::path::PathBuf;
use std::time::Duration;

use frankenstein::AsyncTelegramApi;
use serde::Deserialize;

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
        Ok(BotApi {
            client,
            url: format!("{}/bot{token}", api_base.trim_end_matches('/')),
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

#[async_trait::async_trait]
impl AsyncTelegramApi for BotApi {
    type Error = BotError;

    async fn request<Params, Output>(
        &self,
        method: &str,
        params: Option<Params>,
    ) -> Result<Output, Self::Error>
    where
        Params: serde::ser::Serialize + std::fmt::Debug + std::marker::Send,
        Output: serde::de::DeserializeOwned,
    {
        let body = params
            .map(|p| serde_json::to_string(&p))
            .transpose()
            .map_err(|e| BotError::Decode(e.to_string()))?;
        let text = self.post(method, body).await?;
        serde_json::from_str(&text).map_err(|e| BotError::Decode(e.to_string()))
    }

    async fn request_with_form_data<Params, Output>(
        &self,
        method: &str,
        _params: Params,
        _files: Vec<(&str, PathBuf)>,
    ) -> Result<Output, Self::Error>
    where
        Params: serde::ser::Serialize + std::fmt::Debug + std::marker::Send,
        Output: serde::de::DeserializeOwned,
    {
        Err(BotError::Decode(format!(
            "{method}: odek sends no files to Telegram"
        )))
    }
}
