//! The session index: FTS5 (BM25) over what saved sessions said — user messages, final
//! answers and one-line tool-call summaries, redacted — in `odek.db`.
//!
//! It is brought up to date at the end of every turn for that one session (only the messages
//! added since the last update are read, so the cost does not grow with the number of
//! sessions) and rebuilt from the session files by `odek session reindex`, or on first use
//! when it is missing or was made by another index version. Session files stay the source of
//! truth: a session whose file is gone is dropped from results (and from the index).

use rusqlite::{OptionalExtension, params};
use sha2::{Digest, Sha256};

use super::{Memory, MemoryError};
use crate::llm::{Message, Role};
use crate::protocol::api::SessionHit;
use crate::redact::Redactor;
use crate::session::{Session, SessionStore};

/// Bumped when what is indexed changes: an index of another version is rebuilt.
pub const INDEX_VERSION: &str = "1";
/// Longest text indexed from one message, in bytes.
const MAX_DOC_BYTES: usize = 4000;
/// Longest condensed transcript `session_search` returns, in bytes.
pub const MAX_CONDENSED_BYTES: usize = 8000;
/// Rows read from FTS5 before they are grouped by session.
const MAX_ROWS: usize = 400;

/// What an update did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexUpdate {
    /// Passages added.
    pub added: usize,
    /// True when the session was indexed from scratch (new, or its saved transcript was
    /// rewritten).
    pub rebuilt: bool,
}

/// The passages of `messages[from..]`: (kind, text).
pub fn passages(
    messages: &[Message],
    from: usize,
    redactor: &Redactor,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for m in messages.iter().skip(from) {
        match m.role {
            Role::User if !m.content.trim().is_empty() => {
                out.push(("user", clip(&redactor.redact(&m.content))));
            }
            Role::Assistant if m.tool_calls.is_empty() && !m.content.trim().is_empty() => {
                out.push(("answer", clip(&redactor.redact(&m.content))));
            }
            Role::Assistant => {
                for call in &m.tool_calls {
                    out.push(("tool", redactor.redact(&tool_line(call)).into_owned()));
                }
            }
            _ => {}
        }
    }
    out
}

/// The first tool whose result in `messages` was external content (web, MCP, sub-agent), if
/// any: the transcript itself says whether a session took some in, so the flag survives a
/// lost or rebuilt database.
pub fn external_source(messages: &[Message]) -> Option<&str> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.name.as_deref())
        .find(|name| crate::tools::is_external_tool_name(name))
}

/// `name args…` on one line, cut at 160 characters.
fn tool_line(call: &crate::llm::ToolCall) -> String {
    let args: String = call
        .function
        .arguments
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let line = format!("{} {args}", call.function.name);
    match line.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}

fn clip(text: &str) -> String {
    crate::text::head_and_tail(text, MAX_DOC_BYTES).into_owned()
}

/// A fingerprint of the first `n` messages as indexed: the first user message and the n-th
/// message. When the saved transcript no longer has the same ones there (trimmed in place,
/// rewritten), the session is indexed again from scratch instead of from message `n`.
fn fingerprint(messages: &[Message], n: usize) -> String {
    let mut h = Sha256::new();
    for m in messages.iter().filter(|m| m.role == Role::User).take(1) {
        h.update(m.content.as_bytes());
    }
    h.update([0]);
    if let Some(last) = n.checked_sub(1).and_then(|i| messages.get(i)) {
        h.update(format!("{:?}", last.role).as_bytes());
        h.update(last.content.as_bytes());
        for c in &last.tool_calls {
            h.update(c.id.as_bytes());
        }
    }
    crate::util::hex::encode(&h.finalize()[..8])
}

/// User turns of a session: its user messages, or more when trimming dropped some (the
/// session's own count and its run records remember them).
pub(crate) fn user_turns(session: &Session) -> i64 {
    let counted = session
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .count();
    counted.max(session.turns as usize).max(session.runs.len()) as i64
}

/// The session's title as lists show it.
fn title_of(session: &Session) -> String {
    let title = session.name.as_deref().unwrap_or(&session.task);
    crate::text::head_and_tail(title, 200).into_owned()
}

impl Memory {
    /// Brings the index up to date with `session` (its saved transcript); `external` records
    /// that a turn of it took in external content (kept once set).
    pub fn index_session(
        &self,
        session: &Session,
        redactor: &Redactor,
        external: bool,
    ) -> Result<IndexUpdate, MemoryError> {
        let head = fingerprint(&session.messages, session.messages.len());
        let external = external || external_source(&session.messages).is_some();
        self.write(|tx| {
            let known: Option<(usize, String)> = tx
                .query_row(
                    "SELECT messages, head FROM indexed_sessions WHERE id = ?1",
                    [&session.id],
                    |r| Ok((r.get::<_, i64>(0)? as usize, r.get(1)?)),
                )
                .optional()?;
            let from = match &known {
                Some((n, h))
                    if *n <= session.messages.len() && *h == fingerprint(&session.messages, *n) =>
                {
                    *n
                }
                _ => 0,
            };
            let rebuilt = from == 0 && known.is_some();
            if rebuilt {
                delete_passages(tx, &session.id)?;
            }
            let docs = passages(&session.messages, from, redactor);
            let mut insert = tx.prepare(
                "INSERT INTO session_text (session_id, kind, body) VALUES (?1, ?2, ?3)",
            )?;
            let mut remember =
                tx.prepare("INSERT INTO session_rows (session_id, row) VALUES (?1, ?2)")?;
            for (kind, body) in &docs {
                insert.execute(params![session.id, kind, body])?;
                remember.execute(params![session.id, tx.last_insert_rowid()])?;
            }
            let user_turns = user_turns(session);
            tx.execute(
                "INSERT INTO indexed_sessions (id, title, origin, created_at, updated_at, messages, head, user_turns, external)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (id) DO UPDATE SET title = ?2, origin = ?3, updated_at = ?5, messages = ?6,
                   head = ?7, user_turns = ?8, external = max(external, ?9)",
                params![
                    session.id,
                    redactor.redact(&title_of(session)),
                    session.origin,
                    session.created_at,
                    session.updated_at,
                    session.messages.len() as i64,
                    head,
                    user_turns,
                    external as i64
                ],
            )?;
            Ok(IndexUpdate {
                added: docs.len(),
                rebuilt,
            })
        })
    }

    /// True when a turn of the session took in external content (or its index row says so).
    pub fn session_is_external(&self, id: &str) -> Result<bool, MemoryError> {
        let conn = self.conn();
        let flag: Option<i64> = conn
            .query_row(
                "SELECT external FROM indexed_sessions WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(flag.unwrap_or(0) != 0)
    }

    /// Drops a session from the index (its file was deleted).
    pub fn forget_session(&self, id: &str) -> Result<(), MemoryError> {
        self.write(|tx| {
            delete_passages(tx, id)?;
            tx.execute("DELETE FROM indexed_sessions WHERE id = ?1", [id])?;
            tx.execute("DELETE FROM episode_text WHERE session_id = ?1", [id])?;
            tx.execute("DELETE FROM episodes WHERE session_id = ?1", [id])?;
            tx.execute(
                "DELETE FROM vectors WHERE key = ?1 AND kind IN ('session', 'episode')",
                [id],
            )?;
            Ok(())
        })
    }

    /// True when the index was built by this index version (else it is rebuilt on first use).
    pub fn index_is_current(&self) -> Result<bool, MemoryError> {
        Ok(self.meta("index_version")?.as_deref() == Some(INDEX_VERSION))
    }

    /// Rebuilds the whole index from the session files (episodes and promotions are kept:
    /// they are not in the files). `progress` hears (done, total) now and then.
    pub fn reindex(
        &self,
        store: &SessionStore,
        redactor: &Redactor,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<ReindexReport, MemoryError> {
        let listing = store
            .list()
            .map_err(|e| MemoryError::Other(format!("cannot list sessions: {e}")))?;
        self.write(|tx| {
            tx.execute("DELETE FROM session_text", [])?;
            tx.execute("DELETE FROM session_rows", [])?;
            tx.execute("UPDATE indexed_sessions SET messages = 0, head = ''", [])?;
            Ok(())
        })?;
        let total = listing.sessions.len();
        let mut report = ReindexReport {
            problems: listing.problems.clone(),
            ..ReindexReport::default()
        };
        for (n, summary) in listing.sessions.iter().enumerate() {
            match store.load(&summary.id) {
                Ok(session) => {
                    let external = self.session_is_external(&session.id)?;
                    report.passages += self.index_session(&session, redactor, external)?.added;
                    report.sessions += 1;
                }
                Err(e) => report.problems.push(format!("{}: {e}", summary.id)),
            }
            if n % 200 == 199 {
                progress(n + 1, total);
            }
        }
        self.forget_missing(store)?;
        self.set_meta("index_version", INDEX_VERSION)?;
        progress(total, total);
        Ok(report)
    }

    /// Drops every indexed session whose file is gone.
    pub fn forget_missing(&self, store: &SessionStore) -> Result<usize, MemoryError> {
        let gone: Vec<String> = self
            .indexed_ids()?
            .into_iter()
            .filter(|id| !store.exists(id))
            .collect();
        for id in &gone {
            self.forget_session(id)?;
        }
        Ok(gone.len())
    }

    fn indexed_ids(&self) -> Result<Vec<String>, MemoryError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT id FROM indexed_sessions")
            .map_err(|e| self.err(e))?;
        let ids = stmt
            .query_map([], |r| r.get(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<String>, _>>()
            .map_err(|e| self.err(e))?;
        Ok(ids)
    }

    /// The sessions matching `query` best first (BM25 over their passages, each session
    /// ranked by its best passage), at most `limit`.
    pub fn search_sessions(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SessionHit>, MemoryError> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        let conn = self.conn();
        let err = |e| self.err(e);
        // Ranks first (cheap), then builds the snippet of each kept session's best passage
        // only: a snippet for every matching row would cost more than the ranking.
        let mut ranked = conn
            .prepare(
                "SELECT rowid, session_id, rank FROM session_text WHERE session_text MATCH ?1
                 ORDER BY rank LIMIT ?2",
            )
            .map_err(err)?;
        let rows = ranked
            .query_map(params![fts, MAX_ROWS as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, f64>(2)?,
                ))
            })
            .map_err(err)?;
        let mut best: Vec<(i64, String, f64)> = Vec::new();
        for row in rows {
            let row = row.map_err(err)?;
            if !best.iter().any(|(_, id, _)| *id == row.1) {
                best.push(row);
                if best.len() == limit {
                    break;
                }
            }
        }
        let mut detail = conn
            .prepare(
                "SELECT snippet(session_text, 2, '«', '»', '…', 16), s.title, s.origin, s.updated_at,
                        s.external
                 FROM session_text t JOIN indexed_sessions s ON s.id = t.session_id
                 WHERE session_text MATCH ?1 AND t.rowid = ?2",
            )
            .map_err(err)?;
        let mut hits = Vec::with_capacity(best.len());
        for (row, id, score) in best {
            let found = detail
                .query_row(params![fts, row], |r| {
                    Ok(SessionHit {
                        id: id.clone(),
                        score,
                        snippet: r.get(0)?,
                        title: r.get(1)?,
                        origin: r.get(2)?,
                        date: r.get(3)?,
                        external: r.get::<_, i64>(4)? != 0,
                    })
                })
                .optional()
                .map_err(err)?;
            hits.extend(found);
        }
        Ok(hits)
    }

    /// One indexed session as a hit without a snippet (its title stands in).
    pub fn session_hit(&self, id: &str) -> Result<Option<SessionHit>, MemoryError> {
        let conn = self.conn();
        conn.query_row(
            "SELECT id, title, origin, updated_at, external FROM indexed_sessions WHERE id = ?1",
            [id],
            |r| {
                let title: String = r.get(1)?;
                Ok(SessionHit {
                    id: r.get(0)?,
                    snippet: title.clone(),
                    title,
                    origin: r.get(2)?,
                    date: r.get(3)?,
                    score: 0.0,
                    external: r.get::<_, i64>(4)? != 0,
                })
            },
        )
        .optional()
        .map_err(|e| self.err(e))
    }

    pub(crate) fn meta(&self, key: &str) -> Result<Option<String>, MemoryError> {
        let conn = self.conn();
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    pub(crate) fn set_meta(&self, key: &str, value: &str) -> Result<(), MemoryError> {
        self.conn()
            .execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2",
                params![key, value],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}

/// Deletes a session's passages by their rows (FTS5 finds a row at once; a search by the
/// unindexed `session_id` column would read the whole table).
fn delete_passages(tx: &rusqlite::Transaction<'_>, id: &str) -> rusqlite::Result<()> {
    tx.execute(
        "DELETE FROM session_text WHERE rowid IN (SELECT row FROM session_rows WHERE session_id = ?1)",
        [id],
    )?;
    tx.execute("DELETE FROM session_rows WHERE session_id = ?1", [id])?;
    Ok(())
}

/// What a rebuild did.
#[derive(Debug, Clone, Default)]
pub struct ReindexReport {
    /// Sessions indexed.
    pub sessions: usize,
    /// Passages indexed.
    pub passages: usize,
    /// Files that could not be read.
    pub problems: Vec<String>,
}

/// The words of `query` as an FTS5 expression: each a quoted term (so no character of
/// the query is FTS5 syntax), any of them matching, BM25 ranking those with more first.
/// `None` when the query has no word.
pub fn fts_query(query: &str) -> Option<String> {
    let terms: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .take(32)
        .map(|w| format!("\"{w}\""))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

/// A bounded, readable transcript of `session`: user messages, final answers and one line
/// per tool call (what `session_search` returns for a `session_id`).
pub fn condensed_transcript(session: &Session, redactor: &Redactor) -> String {
    let mut out = format!(
        "session {} — {} — {}\n",
        session.id,
        session.updated_at,
        title_of(session)
    );
    for (kind, text) in passages(&session.messages, 0, redactor) {
        let label = match kind {
            "user" => "user",
            "answer" => "assistant",
            _ => "tool call",
        };
        out.push_str(&format!("\n{label}: {}\n", text.trim()));
    }
    crate::text::head_and_tail(&out, MAX_CONDENSED_BYTES).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn session(id: &str, messages: Vec<Message>) -> Session {
        let store = SessionStore::new(std::path::Path::new("/nonexistent"), Default::default());
        let mut s = store.new_session("m", None, "task", messages);
        s.id = id.into();
        s
    }

    #[test]
    fn fts_queries_quote_every_word() {
        assert_eq!(
            fts_query("rust's \"NEAR\" (x) OR y*").unwrap(),
            "\"rust\" OR \"s\" OR \"NEAR\" OR \"x\" OR \"OR\" OR \"y\""
        );
        assert_eq!(fts_query("  ?! "), None);
    }

    #[test]
    fn a_session_is_found_by_a_word_of_its_answer_and_updated_incrementally() {
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::open(dir.path()).unwrap();
        let r = Redactor::new();
        let mut call = Message::assistant("");
        call.tool_calls
            .push(ToolCall::new("c1", "shell", r#"{"command": "ls -la"}"#));
        let mut s = session(
            "20260101-a",
            vec![
                Message::system("sys"),
                Message::user("what is in the crate?"),
                call,
                Message::tool_result("c1", "shell", "Cargo.toml"),
                Message::assistant("It holds the zeppelin module."),
            ],
        );
        let first = m.index_session(&s, &r, false).unwrap();
        assert_eq!(first.added, 3);
        let hits = m.search_sessions("zeppelin", 5).unwrap();
        assert_eq!(hits.len(), 1);
        assert!(
            hits[0].snippet.contains("«zeppelin»"),
            "{}",
            hits[0].snippet
        );
        s.messages.push(Message::user("and the blimp?"));
        s.messages.push(Message::assistant("No blimp."));
        let second = m.index_session(&s, &r, false).unwrap();
        assert_eq!(
            second,
            IndexUpdate {
                added: 2,
                rebuilt: false
            }
        );
        assert_eq!(m.search_sessions("blimp", 5).unwrap().len(), 1);
        assert_eq!(
            m.search_sessions("ls", 5).unwrap().len(),
            1,
            "tool lines are indexed"
        );
        // Trimmed in place (the first user message kept) and grown past the old length: the
        // index starts again rather than skip the messages that moved.
        s.messages.drain(2..5);
        s.messages.extend([
            Message::user("what about the dirigible?"),
            Message::assistant("The dirigible is fine."),
            Message::user("and the balloon?"),
            Message::assistant("Balloon ok."),
        ]);
        assert!(s.messages.len() > 7);
        let trimmed = m.index_session(&s, &r, false).unwrap();
        assert!(trimmed.rebuilt);
        assert_eq!(m.search_sessions("dirigible", 5).unwrap().len(), 1);
        assert!(
            m.search_sessions("ls", 5).unwrap().is_empty(),
            "dropped passages leave"
        );
        s.messages.truncate(2);
        let third = m.index_session(&s, &r, false).unwrap();
        assert!(third.rebuilt);
        assert!(m.search_sessions("blimp", 5).unwrap().is_empty());
        m.forget_session(&s.id).unwrap();
        assert!(m.search_sessions("crate", 5).unwrap().is_empty());
    }

    #[test]
    fn a_transcript_with_a_web_or_mcp_result_is_external_whatever_the_caller_says() {
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::open(dir.path()).unwrap();
        let r = Redactor::new();
        for (id, tool, external) in [
            ("20260101-c", "read_file", false),
            ("20260101-d", "web_fetch", true),
            ("20260101-e", "everything__echo", true),
        ] {
            let s = session(
                id,
                vec![
                    Message::user("go"),
                    Message::tool_result("c1", tool, "text"),
                ],
            );
            m.index_session(&s, &r, false).unwrap();
            assert_eq!(m.session_is_external(id).unwrap(), external, "{tool}");
        }
    }

    #[test]
    fn secrets_are_redacted_before_indexing() {
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::open(dir.path()).unwrap();
        let mut r = Redactor::new();
        r.add_secret("hunter2-very-secret-value");
        let s = session(
            "20260101-b",
            vec![Message::user("the key is hunter2-very-secret-value")],
        );
        m.index_session(&s, &r, false).unwrap();
        assert!(m.search_sessions("hunter2", 5).unwrap().is_empty());
    }
}
