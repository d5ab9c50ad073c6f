//! Fallback models (`fallback_models`, docs/FALLBACK.md): one turn's chain of models, the
//! configured one first. When a request's retries are spent on a 429, a 5xx, an overload or a
//! timeout, the request is asked again of the next model of the chain (its own provider, key
//! and wire), and the rest of the turn stays on it; a new chain (the next turn) starts from
//! the first model again.
//!
//! A provider's private state (thinking signatures, encrypted reasoning, call extras) goes
//! back only to the provider that made it: an answer of a fallback on another provider has
//! its state marked with that provider ([`super::ProviderState::origin`]), and a request
//! leaves out every state that is not the asked model's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;

use super::retry::retry_reason;
use super::{
    ChatModel, ChatRequest, ChatResponse, Delta, DeltaSink, LlmError, Message, RequestMessages,
    WindowSize,
};

/// One model of a chain.
pub struct FallbackLink {
    /// The model.
    pub model: Arc<dyn ChatModel>,
    /// How the user named it (`anthropic:claude-sonnet-4-5`), for the notice.
    pub label: String,
    /// The provider its private state belongs to: `None` for the first model's provider.
    pub origin: Option<String>,
}

/// Told when a request moves to the next model of the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FallbackNotice {
    /// The model whose retries were spent.
    pub from: String,
    /// The model asked next.
    pub to: String,
    /// Why, e.g. `429 Too Many Requests`.
    pub reason: String,
}

/// Hears of each move to the next model.
pub type FallbackListener = Box<dyn Fn(&FallbackNotice) + Send + Sync>;

/// A [`ChatModel`] that asks the models of its chain in turn (see the module docs). Its
/// [`ChatModel::model_name`] is the name of the model that answered last (the first one's
/// until a fallback answers).
pub struct FallbackChain {
    links: Vec<FallbackLink>,
    current: AtomicUsize,
    listener: FallbackListener,
}

impl FallbackChain {
    /// The chain `links` (the configured model first), telling `listener` of each move.
    /// `links` must not be empty.
    pub fn new(links: Vec<FallbackLink>, listener: FallbackListener) -> FallbackChain {
        FallbackChain {
            links,
            current: AtomicUsize::new(0),
            listener,
        }
    }

    async fn ask(
        link: &FallbackLink,
        request: &ChatRequest<'_>,
        on_delta: Option<DeltaSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        let own = without_foreign_state(request.messages, link.origin.as_deref());
        let stripped;
        let request = match &own {
            Some(messages) => {
                stripped = ChatRequest {
                    messages: RequestMessages::new(messages)
                        .with_images(request.messages.sends_images()),
                    ..*request
                };
                &stripped
            }
            None => request,
        };
        let mut response = link.model.complete(request, on_delta).await?;
        if let Some(state) = response.message.provider_state.as_mut() {
            state.origin = link.origin.clone();
        }
        Ok(response)
    }
}

/// True when a failure, its retries spent, is one another model may not have: a 429, a 5xx
/// or Anthropic's 529 (not a context overflow), a timeout, an idle stream.
pub fn falls_back(error: &LlmError) -> bool {
    match error.root() {
        LlmError::Status { status, .. } => match status {
            429 => true,
            500..=599 => !error.is_context_length(),
            _ => false,
        },
        LlmError::Timeout(_) | LlmError::StreamIdle(_) => true,
        _ => false,
    }
}

/// The messages of `messages` with every provider state that is not `origin`'s left out, or
/// `None` when there is none to leave out (nothing copied).
fn without_foreign_state(
    messages: RequestMessages<'_>,
    origin: Option<&str>,
) -> Option<Vec<Message>> {
    let foreign = |m: &Message| {
        m.provider_state
            .as_ref()
            .is_some_and(|s| s.origin.as_deref() != origin)
    };
    if !messages.iter().any(foreign) {
        return None;
    }
    Some(
        messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                if foreign(&m) {
                    m.provider_state = None;
                }
                m
            })
            .collect(),
    )
}

#[async_trait]
impl ChatModel for FallbackChain {
    fn model_name(&self) -> &str {
        self.links
            .get(self.current.load(Ordering::SeqCst))
            .map_or("", |l| l.model.model_name())
    }

    async fn complete(
        &self,
        request: &ChatRequest<'_>,
        on_delta: Option<DeltaSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        // Text a failed model streamed is taken back before the next one answers.
        let delivered = AtomicBool::new(false);
        let sink = |delta: Delta<'_>| {
            delivered.store(!matches!(delta, Delta::Restart), Ordering::SeqCst);
            if let Some(outer) = on_delta {
                outer(delta);
            }
        };
        let tracked: Option<DeltaSink<'_>> = on_delta.map(|_| &sink as DeltaSink<'_>);
        let mut index = self.current.load(Ordering::SeqCst);
        loop {
            let Some(link) = self.links.get(index) else {
                return Err(LlmError::Config("the model chain is empty".into()));
            };
            let error = match Self::ask(link, request, tracked).await {
                Err(error) if falls_back(&error) => error,
                answer => return answer,
            };
            let Some(next) = self.links.get(index + 1) else {
                return Err(error);
            };
            if let (true, Some(outer)) = (delivered.swap(false, Ordering::SeqCst), on_delta) {
                outer(Delta::Restart);
            }
            (self.listener)(&FallbackNotice {
                from: link.label.clone(),
                to: next.label.clone(),
                reason: retry_reason(error.root()),
            });
            index += 1;
            self.current.store(index, Ordering::SeqCst);
        }
    }

    async fn context_window(&self) -> Option<WindowSize> {
        self.links.first()?.model.context_window().await
    }

    async fn listed_models(&self) -> Option<Vec<String>> {
        self.links.first()?.model.listed_models().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ProviderState, Usage};
    use std::sync::Mutex;

    /// Answers with its name, or fails with `status` when one is set; records what it got.
    struct Stub {
        name: &'static str,
        status: Option<u16>,
        seen: Mutex<Vec<Vec<Message>>>,
    }

    impl Stub {
        fn new(name: &'static str, status: Option<u16>) -> Arc<Stub> {
            Arc::new(Stub {
                name,
                status,
                seen: Mutex::default(),
            })
        }
    }

    #[async_trait]
    impl ChatModel for Stub {
        fn model_name(&self) -> &str {
            self.name
        }

        async fn complete(
            &self,
            request: &ChatRequest<'_>,
            sink: Option<DeltaSink<'_>>,
        ) -> Result<ChatResponse, LlmError> {
            self.seen.lock().unwrap().push(request.messages.to_vec());
            if let Some(status) = self.status {
                // A failing model streamed the start of an answer first.
                if let Some(sink) = sink {
                    sink(Delta::Content("partial"));
                }
                return Err(LlmError::RetryExhausted {
                    attempts: 2,
                    last: Box::new(LlmError::Status {
                        status,
                        reason: "Too Many Requests".into(),
                        body: String::new(),
                        retry_after: None,
                    }),
                });
            }
            let mut message = Message::assistant(self.name);
            message.provider_state = Some(Box::new(ProviderState {
                wire: "anthropic".into(),
                items: vec![serde_json::json!({"type": "thinking"})],
                origin: None,
            }));
            Ok(ChatResponse {
                message,
                usage: Usage::default(),
                finish_reason: None,
            })
        }
    }

    fn chain(
        first: Arc<Stub>,
        second: Arc<Stub>,
        notices: Arc<Mutex<Vec<FallbackNotice>>>,
    ) -> FallbackChain {
        let link = |model: Arc<Stub>, label: &str, origin: Option<&str>| FallbackLink {
            model,
            label: label.into(),
            origin: origin.map(str::to_string),
        };
        FallbackChain::new(
            vec![
                link(first, "main", None),
                link(second, "gw:backup", Some("gw")),
            ],
            Box::new(move |n| notices.lock().unwrap().push(n.clone())),
        )
    }

    fn request(messages: &[Message]) -> ChatRequest<'_> {
        ChatRequest {
            messages: RequestMessages::new(messages),
            tools: &[],
            stream: false,
            max_tokens: None,
            on_retry: None,
        }
    }

    #[tokio::test]
    async fn a_spent_429_moves_on_and_stays_the_state_goes_only_to_its_provider() {
        let (busy, backup) = (Stub::new("main", Some(429)), Stub::new("backup", None));
        let notices = Arc::default();
        let chain = chain(busy.clone(), backup.clone(), Arc::clone(&notices));
        let mut own = Message::assistant("earlier");
        own.provider_state = Some(Box::new(ProviderState {
            wire: "anthropic".into(),
            items: vec![],
            origin: None,
        }));
        let mut history = vec![Message::user("hi"), own];
        let answer = chain.complete(&request(&history), None).await.unwrap();
        assert_eq!(answer.message.content, "backup");
        assert_eq!(chain.model_name(), "backup");
        let origin = answer
            .message
            .provider_state
            .as_ref()
            .unwrap()
            .origin
            .clone();
        assert_eq!(origin.as_deref(), Some("gw"), "marked as the fallback's");
        assert_eq!(
            *notices.lock().unwrap(),
            vec![FallbackNotice {
                from: "main".into(),
                to: "gw:backup".into(),
                reason: "429 Too Many Requests".into()
            }]
        );
        let sent = backup.seen.lock().unwrap()[0].clone();
        assert!(
            sent[1].provider_state.is_none(),
            "the first provider's state stays home"
        );
        history.push(answer.message);
        chain.complete(&request(&history), None).await.unwrap();
        assert_eq!(
            busy.seen.lock().unwrap().len(),
            1,
            "the rest of the turn stays on the fallback"
        );
        let sent = backup.seen.lock().unwrap()[1].clone();
        assert!(
            sent[2].provider_state.is_some(),
            "its own state goes back to it"
        );
        // A new chain (the next turn) asks the first model again, without the fallback's state.
        let next = FallbackChain::new(
            vec![FallbackLink {
                model: busy.clone(),
                label: "main".into(),
                origin: None,
            }],
            Box::new(|_| {}),
        );
        assert!(next.complete(&request(&history), None).await.is_err());
        let sent = busy.seen.lock().unwrap()[1].clone();
        assert!(sent[1].provider_state.is_some() && sent[2].provider_state.is_none());
    }

    #[tokio::test]
    async fn text_the_failed_model_streamed_is_taken_back_before_the_fallback_answers() {
        let chain = chain(
            Stub::new("main", Some(503)),
            Stub::new("backup", None),
            Arc::default(),
        );
        let seen = Mutex::new(Vec::new());
        let sink = |d: Delta<'_>| seen.lock().unwrap().push(format!("{d:?}"));
        let messages = [Message::user("hi")];
        chain
            .complete(&request(&messages), Some(&sink))
            .await
            .unwrap();
        assert_eq!(*seen.lock().unwrap(), ["Content(\"partial\")", "Restart"]);
    }

    #[tokio::test]
    async fn a_refusal_does_not_move_on() {
        let (refused, backup) = (Stub::new("main", Some(400)), Stub::new("backup", None));
        let notices = Arc::default();
        let chain = chain(refused, backup.clone(), Arc::clone(&notices));
        assert!(
            chain
                .complete(&request(&[Message::user("hi")]), None)
                .await
                .is_err()
        );
        assert!(backup.seen.lock().unwrap().is_empty());
        assert!(notices.lock().unwrap().is_empty());
        assert!(falls_back(&LlmError::Timeout(
            std::time::Duration::from_secs(1)
        )));
        let overflow = LlmError::Status {
            status: 500,
            reason: String::new(),
            body: "the input length exceeds the context length".into(),
            retry_after: None,
        };
        assert!(!falls_back(&overflow));
    }
}
