//! `session_search`: the model finds earlier sessions by what was said in them
//! (`{"query", "limit"}` → id, date, title, origin and a snippet per session) and reads one
//! condensed (`{"session_id"}` → user messages, final answers and tool-call lines, bounded,
//! wrapped untrusted).

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::embed::Embedder;
use super::index::condensed_transcript;
use super::{Memory, MemoryError};
use crate::protocol::api::SessionHit;
use crate::redact::Redactor;
use crate::session::SessionStore;
use crate::tools::{Taint, Tool, ToolContext, ToolError, decode_args};

/// The tool's name.
pub const TOOL_NAME: &str = crate::tools::catalog::SESSION_SEARCH.name;
/// Sessions listed unless the call asks for fewer or more.
const DEFAULT_LIMIT: usize = 5;
/// Most sessions one call lists.
pub(crate) const MAX_LIMIT: usize = 20;

/// The `session_search` tool of one turn.
pub struct SessionSearchTool {
    memory: Arc<Memory>,
    sessions: SessionStore,
    embedder: Option<Embedder>,
    current: Option<String>,
    taint: Arc<Taint>,
}

impl SessionSearchTool {
    /// The tool for a turn of `current` (left out of results).
    pub fn new(
        memory: Arc<Memory>,
        sessions: SessionStore,
        embedder: Option<Embedder>,
        current: Option<String>,
        taint: Arc<Taint>,
    ) -> Self {
        SessionSearchTool {
            memory,
            sessions,
            embedder,
            current,
            taint,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    session_id: Option<String>,
}

/// Where a search looks and how: the database, the session files (the index is rebuilt
/// from them when missing), the embeddings endpoint, the redactor.
pub struct Searcher<'a> {
    /// `odek.db`.
    pub memory: &'a Arc<Memory>,
    /// The session files.
    pub sessions: &'a SessionStore,
    /// Hybrid ranking, when configured.
    pub embedder: Option<&'a Embedder>,
    /// This process's redactor: the query is redacted before it reaches the endpoint, and a
    /// rebuilt index with it.
    pub redactor: &'a Arc<Redactor>,
}

/// Searches the index (rebuilt first when missing or stale), ranking hybrid when an
/// embedder is given and answers; sessions whose file is gone are dropped.
pub async fn search(
    with: &Searcher<'_>,
    query: &str,
    limit: usize,
    except: Option<&str>,
) -> Result<Vec<SessionHit>, MemoryError> {
    let (memory, sessions, redactor) = (with.memory, with.sessions, with.redactor.clone());
    let semantic = match with.embedder {
        Some(e) => e
            .embed(&[redactor.redact(query).into_owned()])
            .await
            .map_err(|e| tracing::debug!("{e}"))
            .ok()
            .and_then(|mut v| v.pop())
            .map(|v| (e.model().to_string(), v)),
        None => None,
    };
    let memory = memory.clone();
    let sessions = sessions.clone();
    let (query, except) = (query.to_string(), except.map(str::to_string));
    tokio::task::spawn_blocking(move || {
        ensure_index(&memory, &sessions, &redactor)?;
        let want = limit + 1;
        let mut hits = memory.search_sessions(&query, want.max(50))?;
        if let Some((model, vector)) = semantic {
            let near = memory.nearest("session", &model, &vector, 50)?;
            let lexical: Vec<String> = hits.iter().map(|h| h.id.clone()).collect();
            let order = super::embed::fuse(&lexical, &near);
            let mut ranked = Vec::new();
            for id in order {
                match hits.iter().position(|h| h.id == id) {
                    Some(i) => ranked.push(hits.swap_remove(i)),
                    None => ranked.extend(memory.session_hit(&id)?),
                }
            }
            hits = ranked;
        }
        let mut kept = Vec::new();
        for hit in hits {
            if Some(hit.id.as_str()) == except.as_deref() {
                continue;
            }
            if !sessions.exists(&hit.id) {
                memory.forget_session(&hit.id)?;
                continue;
            }
            kept.push(hit);
            if kept.len() == limit {
                break;
            }
        }
        Ok(kept)
    })
    .await
    .map_err(|e| MemoryError::Other(format!("session search: {e}")))?
}

/// Rebuilds the index when it is missing or of another version.
pub fn ensure_index(
    memory: &Memory,
    sessions: &SessionStore,
    redactor: &Redactor,
) -> Result<(), MemoryError> {
    if !memory.index_is_current()? {
        memory.reindex(sessions, redactor, &mut |_, _| {})?;
    }
    Ok(())
}

/// The hits as the model reads them.
pub fn format_hits(query: &str, hits: &[SessionHit]) -> String {
    if hits.is_empty() {
        return format!("no earlier session matches \"{query}\"");
    }
    let mut out = String::new();
    for h in hits {
        out.push_str(&format!(
            "{} | {} | {} | {}\n  {}\n",
            h.id,
            h.date.get(..10).unwrap_or(&h.date),
            h.origin.as_deref().unwrap_or("cli"),
            h.title,
            h.snippet.replace('\n', " ")
        ));
    }
    out.push_str("(session_search with a session_id reads one)");
    out
}

#[async_trait]
impl Tool for SessionSearchTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }

    fn description(&self) -> &str {
        "Search earlier sessions by what was said in them (query), or read one condensed (session_id)."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "query":{"type":"string"},
                "limit":{"type":"integer","minimum":1,"maximum":20},
                "session_id":{"type":"string"}
              }
            }"#,
        )
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        Some(match args.get("session_id").and_then(Value::as_str) {
            Some(id) => format!("session:{id}"),
            None => TOOL_NAME.to_string(),
        })
    }

    fn summary(&self, args: &Value) -> String {
        let get = |k| args.get(k).and_then(Value::as_str).unwrap_or("");
        crate::text::truncate(&format!("{}{}", get("query"), get("session_id")), 80).into_owned()
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        if let Some(id) = args.session_id.as_deref().filter(|s| !s.trim().is_empty()) {
            return self.read(id.trim(), &ctx.redactor).await;
        }
        let Some(query) = args.query.as_deref().filter(|q| !q.trim().is_empty()) else {
            return Err(ToolError::new(
                "session_search: give a query, or a session_id to read",
            ));
        };
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let searcher = Searcher {
            memory: &self.memory,
            sessions: &self.sessions,
            embedder: self.embedder.as_ref(),
            redactor: &ctx.redactor,
        };
        let hits = search(&searcher, query, limit, self.current.as_deref())
            .await
            .map_err(|e| ToolError::new(format!("session_search: {e}")))?;
        // Snippets of a session that read the web may carry that content along.
        if hits.iter().any(|h| h.external) {
            self.taint.mark(TOOL_NAME);
        }
        Ok(format_hits(query, &hits))
    }
}

impl SessionSearchTool {
    async fn read(&self, id: &str, redactor: &Arc<Redactor>) -> Result<String, ToolError> {
        let (sessions, memory, id) = (self.sessions.clone(), self.memory.clone(), id.to_string());
        let redactor = redactor.clone();
        let (text, external) = tokio::task::spawn_blocking(move || {
            let session = sessions
                .load(&id)
                .map_err(|e| ToolError::new(format!("session_search: {e}")))?;
            let external = memory.session_is_external(&id).unwrap_or(true)
                || super::index::external_source(&session.messages).is_some();
            Ok::<_, ToolError>((condensed_transcript(&session, &redactor), external))
        })
        .await
        .map_err(|e| ToolError::new(format!("session_search: {e}")))??;
        // What a session that read the web said may carry that content along.
        if external {
            self.taint.mark("session_search");
        }
        Ok(text)
    }
}
