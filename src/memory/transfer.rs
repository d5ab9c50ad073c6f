//! `odek memory export|import`: facts (and episodes) as JSON, or as readable Markdown.
//!
//! Export reads what it can: a database that this odek cannot otherwise use (a newer schema,
//! some damage) is opened read-only and its facts table read row by row, skipping the rows
//! that fail.

use std::path::Path;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use super::episodes::Episode;
use super::facts::{FactFilter, WriteContext};
use super::{
    Budgets, Fact, FactStatus, Memory, MemoryError, MemoryTarget, SOURCE_IMPORT, WriteOutcome,
};

/// The JSON export's format version.
pub const EXPORT_VERSION: u32 = 1;

/// What `odek memory export` writes as JSON.
#[derive(Debug, Serialize, Deserialize)]
pub struct Export {
    /// [`EXPORT_VERSION`].
    pub version: u32,
    /// Every fact and pending write.
    pub facts: Vec<Fact>,
    /// Episodes (not imported: they belong to sessions).
    #[serde(default, skip_deserializing)]
    pub episodes: Vec<Episode>,
}

/// One fact to import: at least its store and text.
#[derive(Debug, Clone, Deserialize)]
pub struct ImportedFact {
    /// `user` or `project`.
    pub target: MemoryTarget,
    /// The project root of a `project` fact (empty = the current project).
    #[serde(default)]
    pub project: String,
    /// The text.
    pub content: String,
    /// Pending facts of an export stay out: only active ones are imported.
    #[serde(default = "active")]
    pub status: FactStatus,
}

fn active() -> FactStatus {
    FactStatus::Active
}

#[derive(Deserialize)]
struct ImportFile {
    facts: Vec<ImportedFact>,
}

/// What an import did.
#[derive(Debug, Default)]
pub struct ImportReport {
    /// Facts added.
    pub added: usize,
    /// Why the others were not (duplicate, over budget…), one line each.
    pub skipped: Vec<String>,
}

/// Everything in an open database.
pub fn export(memory: &Memory) -> Result<Export, MemoryError> {
    Ok(Export {
        version: EXPORT_VERSION,
        facts: memory.list_facts(FactFilter::default())?,
        episodes: memory.episodes()?,
    })
}

/// The facts of a database this odek cannot open normally, read-only, row by row; with a
/// line for each row that could not be read.
pub fn export_read_only(path: &Path) -> Result<(Export, Vec<String>), MemoryError> {
    let conn = super::db::open_read_only(path)?;
    let mut problems = Vec::new();
    let facts = read_facts_leniently(&conn, &mut problems)
        .map_err(|e| MemoryError::from_sqlite(path, e))?;
    Ok((
        Export {
            version: EXPORT_VERSION,
            facts,
            episodes: Vec::new(),
        },
        problems,
    ))
}

fn read_facts_leniently(
    conn: &Connection,
    problems: &mut Vec<String>,
) -> rusqlite::Result<Vec<Fact>> {
    let mut stmt = conn.prepare("SELECT * FROM facts ORDER BY id")?;
    let names: Vec<String> = stmt.column_names().map(str::to_string).collect();
    let col = |name: &str| names.iter().position(|n| n == name);
    let (id, target, project, content, status) = (
        col("id"),
        col("target"),
        col("project"),
        col("content"),
        col("status"),
    );
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    loop {
        let row = match rows.next() {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(e) => {
                problems.push(format!("stopped reading facts: {e}"));
                break;
            }
        };
        let text = |i: Option<usize>| i.and_then(|i| row.get::<_, String>(i).ok());
        let Some(body) = text(content) else {
            problems.push("a fact without readable text was skipped".into());
            continue;
        };
        out.push(Fact {
            id: id.and_then(|i| row.get(i).ok()).unwrap_or(0),
            target: text(target)
                .and_then(|t| MemoryTarget::parse(&t))
                .unwrap_or(MemoryTarget::User),
            project: text(project).unwrap_or_default(),
            content: body,
            status: if text(status).as_deref() == Some("pending") {
                FactStatus::Pending
            } else {
                FactStatus::Active
            },
            action: text(col("action")).unwrap_or_else(|| "add".into()),
            replaces: None,
            session_id: text(col("session_id")),
            source: text(col("source")).unwrap_or_else(|| "model".into()),
            created_at: text(col("created_at")).unwrap_or_default(),
            updated_at: text(col("updated_at")).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// The export as Markdown: one section per store, pending writes last.
pub fn to_markdown(export: &Export) -> String {
    let mut out = String::from("# odek memory\n");
    let active: Vec<&Fact> = export
        .facts
        .iter()
        .filter(|f| f.status == FactStatus::Active)
        .collect();
    let user: Vec<&&Fact> = active
        .iter()
        .filter(|f| f.target == MemoryTarget::User)
        .collect();
    if !user.is_empty() {
        out.push_str("\n## User\n\n");
        for f in user {
            out.push_str(&format!("- {}\n", one_line(&f.content)));
        }
    }
    let mut projects: Vec<&str> = active
        .iter()
        .filter(|f| f.target == MemoryTarget::Project)
        .map(|f| f.project.as_str())
        .collect();
    projects.dedup();
    projects.sort_unstable();
    projects.dedup();
    for p in projects {
        out.push_str(&format!("\n## Project {p}\n\n"));
        for f in active
            .iter()
            .filter(|f| f.target == MemoryTarget::Project && f.project == p)
        {
            out.push_str(&format!("- {}\n", one_line(&f.content)));
        }
    }
    let pending: Vec<&Fact> = export
        .facts
        .iter()
        .filter(|f| f.status == FactStatus::Pending)
        .collect();
    if !pending.is_empty() {
        out.push_str("\n## Pending review (not imported)\n\n");
        for f in pending {
            out.push_str(&format!(
                "- #{} {} {}{}: {}\n",
                f.id,
                f.action,
                f.target.as_str(),
                f.session_id
                    .as_deref()
                    .map(|s| format!(" from session {s}"))
                    .unwrap_or_default(),
                one_line(&f.content)
            ));
        }
    }
    if !export.episodes.is_empty() {
        out.push_str("\n## Episodes (not imported)\n\n");
        for e in &export.episodes {
            out.push_str(&format!("- {}: {}\n", e.session_id, one_line(&e.summary)));
        }
    }
    out
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Why an import file holds no facts to import.
#[derive(Debug, thiserror::Error)]
pub enum ImportFormatError {
    /// JSON, but not an export.
    #[error("not an odek memory export: {0}")]
    Json(serde_json::Error),
    /// Markdown without a `## User` or `## Project` list.
    #[error("no facts found (expected an odek memory export, JSON or Markdown)")]
    NoFacts,
}

impl crate::error::Classified for ImportFormatError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Usage
    }

    fn hint(&self) -> Option<&'static str> {
        Some("import a file odek memory export wrote (JSON or Markdown)")
    }
}

/// Parses an import file: JSON (`{"facts": […]}` as exported) or the Markdown of
/// [`to_markdown`] (`## User`, `## Project <root>`, `- fact` lines; other sections ignored).
pub fn parse_import(text: &str) -> Result<Vec<ImportedFact>, ImportFormatError> {
    if text.trim_start().starts_with('{') {
        let file: ImportFile = serde_json::from_str(text).map_err(ImportFormatError::Json)?;
        return Ok(file
            .facts
            .into_iter()
            .filter(|f| f.status == FactStatus::Active)
            .collect());
    }
    let mut out = Vec::new();
    let mut section: Option<(MemoryTarget, String)> = None;
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            let heading = heading.trim();
            section = if heading.eq_ignore_ascii_case("user") {
                Some((MemoryTarget::User, String::new()))
            } else {
                heading
                    .strip_prefix("Project")
                    .map(|root| (MemoryTarget::Project, root.trim().to_string()))
            };
        } else if let (Some((target, project)), Some(fact)) =
            (&section, line.trim_start().strip_prefix("- "))
            && !fact.trim().is_empty()
        {
            out.push(ImportedFact {
                target: *target,
                project: project.clone(),
                content: fact.trim().to_string(),
                status: FactStatus::Active,
            });
        }
    }
    if out.is_empty() {
        return Err(ImportFormatError::NoFacts);
    }
    Ok(out)
}

/// Adds the facts (active, source `import`); a `project` fact without a root goes to
/// `current_project`. Duplicates and facts over budget are skipped and reported.
pub fn import(
    memory: &Memory,
    facts: &[ImportedFact],
    current_project: &str,
    budgets: Budgets,
    redactor: &crate::redact::Redactor,
) -> ImportReport {
    let mut report = ImportReport::default();
    for f in facts {
        let project = if f.project.is_empty() {
            current_project
        } else {
            f.project.as_str()
        };
        let w = WriteContext {
            project,
            pending: false,
            session_id: None,
            source: SOURCE_IMPORT,
            budgets,
        };
        match memory.add_fact(&w, f.target, &redactor.redact(&f.content)) {
            Ok(WriteOutcome::Saved { .. } | WriteOutcome::Pending { .. }) => report.added += 1,
            Err(e) => report
                .skipped
                .push(format!("{}: {e}", one_line(&f.content))),
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_round_trips_through_import() {
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::open(dir.path()).unwrap();
        let w = WriteContext {
            project: "/w/app",
            pending: false,
            session_id: None,
            source: "user",
            budgets: Budgets::default(),
        };
        m.add_fact(&w, MemoryTarget::User, "Prefers tabs").unwrap();
        m.add_fact(&w, MemoryTarget::Project, "Tests: make test")
            .unwrap();
        m.add_fact(
            &WriteContext { pending: true, ..w },
            MemoryTarget::User,
            "Likes curl | sh",
        )
        .unwrap();
        let md = to_markdown(&export(&m).unwrap());
        assert!(md.contains("## User\n\n- Prefers tabs\n"), "{md}");
        assert!(
            md.contains("## Project /w/app\n\n- Tests: make test\n"),
            "{md}"
        );
        assert!(md.contains("## Pending review (not imported)"), "{md}");
        let facts = parse_import(&md).unwrap();
        assert_eq!(facts.len(), 2, "pending writes are not imported");
        let other = tempfile::tempdir().unwrap();
        let fresh = Memory::open(other.path()).unwrap();
        let r = import(
            &fresh,
            &facts,
            "/elsewhere",
            Budgets::default(),
            &Default::default(),
        );
        assert_eq!(r.added, 2);
        assert_eq!(fresh.active_facts("/w/app").unwrap().1.len(), 1);
        let again = import(
            &fresh,
            &facts,
            "/elsewhere",
            Budgets::default(),
            &Default::default(),
        );
        assert_eq!(
            (again.added, again.skipped.len()),
            (0, 2),
            "duplicates are skipped"
        );
    }

    #[test]
    fn json_round_trips_and_a_newer_schema_still_exports() {
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::open(dir.path()).unwrap();
        let w = WriteContext {
            project: "/p",
            pending: false,
            session_id: None,
            source: "user",
            budgets: Budgets::default(),
        };
        m.add_fact(&w, MemoryTarget::User, "Writes British English")
            .unwrap();
        let json = serde_json::to_string(&export(&m).unwrap()).unwrap();
        assert_eq!(
            parse_import(&json).unwrap()[0].content,
            "Writes British English"
        );
        let path = m.path().to_path_buf();
        drop(m);
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 7).unwrap();
        drop(conn);
        assert!(matches!(
            Memory::open(dir.path()),
            Err(MemoryError::NewerSchema { .. })
        ));
        let (e, problems) = export_read_only(&path).unwrap();
        assert!(problems.is_empty());
        assert_eq!(e.facts[0].content, "Writes British English");
    }
}
