//! What memory adds to a turn: the frozen memory block, the `memory` and `session_search`
//! tools, the taint that makes a turn's memory writes pending, the recall of episodes at the
//! start of a session, and — when the turn ends — the session index update and the episode.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Runtime, SessionHandle};
use crate::llm::{ChatModel, ChatRequest, Message, Role, Usage};
use crate::memory::embed::Embedder;
use crate::memory::episodes::{self, Episode, RECALLED, SUMMARY_MAX_TOKENS};
use crate::memory::search_tool::SessionSearchTool;
use crate::memory::tool::MemoryTool;
use crate::memory::{Budgets, Memory};
use crate::redact::Redactor;
use crate::tools::{Taint, Tool};

/// How long the episode summary call may take (the turn's answer is out; its save waits).
const SUMMARY_TIMEOUT: Duration = Duration::from_secs(30);
/// What the taint of a turn says when an earlier turn of its session took in external
/// content (it stays in the conversation).
pub const EARLIER_TURN: &str = "an earlier turn of this session";

/// A turn's memory work, when memory is on.
pub(super) struct TurnMemory {
    memory: Arc<Memory>,
    taint: Arc<Taint>,
    episodes: bool,
    model: Arc<dyn ChatModel>,
    embedder: Option<Embedder>,
    redactor: Arc<Redactor>,
}

impl Runtime {
    /// The character budgets of the fact stores.
    pub fn memory_budgets(&self) -> Budgets {
        Budgets::from_config(&self.config.memory)
    }

    /// A fresh taint for a turn of `session`: already marked when an earlier turn of it took
    /// in external content (that content is still in the conversation).
    pub(super) fn turn_taint(&self, session: Option<&Arc<SessionHandle>>) -> Arc<Taint> {
        let earlier = match (&self.memory, session) {
            (Some(m), Some(s)) => {
                // A database that cannot say counts as tainted: stricter, never looser.
                m.session_is_external(s.id()).unwrap_or(true)
                    || crate::memory::index::external_source(&s.live().messages).is_some()
            }
            _ => false,
        };
        Arc::new(if earlier {
            Taint::marked(EARLIER_TURN)
        } else {
            Taint::default()
        })
    }

    /// The memory block of a turn starting now (`None` without memory or facts). A database
    /// that fails here leaves the block out with a warning in the log.
    pub fn memory_block(&self) -> Option<String> {
        let memory = self.memory.as_ref()?;
        match memory.active_facts(&self.project_key) {
            Ok((user, project)) => crate::memory::block::render(&user, &project, &self.project_key),
            Err(e) => {
                tracing::warn!("memory block left out: {e}");
                None
            }
        }
    }

    /// `memory` and `session_search` for a turn of `session`, when memory is on.
    pub(super) fn memory_tools(
        &self,
        session: Option<&str>,
        taint: &Arc<Taint>,
    ) -> Vec<Arc<dyn Tool>> {
        let Some(memory) = &self.memory else {
            return Vec::new();
        };
        vec![
            Arc::new(MemoryTool::new(
                memory.clone(),
                self.project_key.clone(),
                self.memory_budgets(),
                session.map(str::to_string),
                taint.clone(),
            )),
            Arc::new(SessionSearchTool::new(
                memory.clone(),
                self.sessions.clone(),
                self.embedder.clone(),
                session.map(str::to_string),
                taint.clone(),
            )),
        ]
    }

    /// The memory work of a turn, when memory is on.
    pub(super) fn turn_memory(&self, taint: &Arc<Taint>) -> Option<TurnMemory> {
        Some(TurnMemory {
            memory: self.memory.clone()?,
            taint: taint.clone(),
            // A replayed or recorded model would answer the side call from its script.
            episodes: self.config.memory.episodes && self.can_delegate,
            model: self.model.clone(),
            embedder: self.embedder.clone(),
            redactor: self.redactor.clone(),
        })
    }
}

impl TurnMemory {
    /// The recall block for the first turn of a session (`history` has no user message
    /// yet): the most relevant recallable episodes of other sessions for the new user
    /// message.
    pub(super) async fn recall(
        &self,
        history: &[Message],
        input: &[Message],
        session_id: &str,
    ) -> Option<Message> {
        if !self.episodes || history.iter().any(|m| m.role == Role::User) {
            return None;
        }
        let query = input
            .iter()
            .rev()
            .find(|m| m.role == Role::User)?
            .content
            .clone();
        let semantic = self.embed_one(&query).await;
        let memory = self.memory.clone();
        let id = session_id.to_string();
        let found =
            tokio::task::spawn_blocking(move || recall_episodes(&memory, &query, &id, semantic))
                .await
                .ok()?;
        match found {
            Ok(episodes) => episodes::recall_message(&episodes),
            Err(e) => {
                tracing::warn!("episode recall failed: {e}");
                None
            }
        }
    }

    /// Before the turn is saved: the episode of the session when one is due (so the side
    /// call's tokens count in the turn's record). `messages` is the turn's final transcript.
    /// Returns the tokens the side call used.
    pub(super) async fn episode(
        &self,
        session: &SessionHandle,
        messages: &[Message],
        cancel: &CancellationToken,
    ) -> Usage {
        if !self.episodes {
            return Usage::default();
        }
        let mut current = session.writer().session().metadata();
        current.messages = messages.to_vec();
        let memory = self.memory.clone();
        let claimed = tokio::task::spawn_blocking(move || {
            let claimed = memory.claim_episode(&current);
            (claimed, current)
        })
        .await;
        let Ok((Ok(true), current)) = claimed else {
            return Usage::default();
        };
        self.write_episode(&current, cancel).await
    }

    /// After the turn is saved: the session index update (with the turn's taint) and the
    /// session's vector.
    pub(super) async fn after_turn(&self, session: &SessionHandle) {
        let saved = session.writer().session().clone();
        let memory = self.memory.clone();
        let redactor = self.redactor.clone();
        let external = self.taint.is_external();
        let indexed = tokio::task::spawn_blocking(move || {
            let update = memory.index_session(&saved, &redactor, external);
            (update, saved)
        })
        .await;
        let Ok((update, saved)) = indexed else {
            return;
        };
        if let Err(e) = update {
            tracing::warn!("session index not updated: {e}");
            return;
        }
        if self.embedder.is_some() {
            let text = crate::memory::index::condensed_transcript(&saved, &self.redactor);
            self.store_vector("session", &saved.id, &text).await;
        }
    }

    async fn write_episode(
        &self,
        current: &crate::session::Session,
        cancel: &CancellationToken,
    ) -> Usage {
        let messages = episodes::summary_request(current, &self.redactor);
        let request = ChatRequest {
            messages: (&messages).into(),
            tools: &[],
            stream: false,
            max_tokens: Some(SUMMARY_MAX_TOKENS),
            on_retry: None,
        };
        let call = tokio::time::timeout(SUMMARY_TIMEOUT, self.model.complete(&request, None));
        let response = tokio::select! {
            r = call => r,
            () = cancel.cancelled() => return Usage::default(),
        };
        let response = match response {
            Ok(Ok(r)) if !r.message.content.trim().is_empty() => r,
            Ok(Err(e)) => {
                tracing::warn!("episode summary failed: {e}");
                return Usage::default();
            }
            _ => return Usage::default(),
        };
        let summary = self
            .redactor
            .redact(response.message.content.trim())
            .into_owned();
        let turns = crate::memory::index::user_turns(current);
        let (memory, id, text) = (self.memory.clone(), current.id.clone(), summary.clone());
        let stored =
            tokio::task::spawn_blocking(move || memory.store_episode(&id, &text, turns)).await;
        if let Ok(Err(e)) = stored {
            tracing::warn!("episode not stored: {e}");
        }
        if self.embedder.is_some() {
            self.store_vector("episode", &current.id, &summary).await;
        }
        response.usage
    }

    async fn embed_one(&self, text: &str) -> Option<(String, Vec<f32>)> {
        let e = self.embedder.as_ref()?;
        match e.embed(&[self.redactor.redact(text).into_owned()]).await {
            Ok(mut v) => v.pop().map(|v| (e.model().to_string(), v)),
            Err(err) => {
                tracing::warn!("{err}; ranking lexically");
                None
            }
        }
    }

    async fn store_vector(&self, kind: &'static str, key: &str, text: &str) {
        let Some((model, vector)) = self.embed_one(text).await else {
            return;
        };
        let (memory, key) = (self.memory.clone(), key.to_string());
        let _ = tokio::task::spawn_blocking(move || {
            if let Err(err) = memory.store_vector(kind, &key, &model, &vector) {
                tracing::warn!("vector not stored: {err}");
            }
        })
        .await;
    }
}

/// The recallable episodes for `query`: BM25, fused with cosine ranking when a query vector
/// is given; never the session's own.
fn recall_episodes(
    memory: &Memory,
    query: &str,
    session_id: &str,
    semantic: Option<(String, Vec<f32>)>,
) -> Result<Vec<Episode>, crate::memory::MemoryError> {
    let Some((model, vector)) = semantic else {
        return memory.recall_lexical(query, RECALLED, Some(session_id));
    };
    let lexical: Vec<String> = memory
        .recall_lexical(query, 20, Some(session_id))?
        .into_iter()
        .map(|e| e.session_id)
        .collect();
    let near = memory.nearest("episode", &model, &vector, 20)?;
    let recallable = memory.recallable_episodes(usize::MAX)?;
    Ok(crate::memory::embed::fuse(&lexical, &near)
        .into_iter()
        .filter(|id| id != session_id)
        .filter_map(|id| recallable.iter().find(|e| e.session_id == id).cloned())
        .take(RECALLED)
        .collect())
}
