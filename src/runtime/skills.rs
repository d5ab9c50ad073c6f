//! What skills add to a turn: the catalog found when the turn is built, its block (sent with
//! the memory block after the system prompt), and `skill_load` / `skill_list` when at least
//! one skill is offered.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Runtime;
use crate::skills::block::{self, Limits};
use crate::skills::{Catalog, Places};
use crate::tools::Tool;

/// How long the skills found at build time stand for the first turn.
const FRESH: Duration = Duration::from_secs(2);

impl Runtime {
    /// Where this runtime looks for skills: `<home>/skills`, the project's folders,
    /// `skills.dirs`.
    pub fn skill_places(&self) -> Places {
        Places::new(
            &self.home,
            &PathBuf::from(&self.project_key),
            &self.config.skills,
        )
    }

    /// The skills a turn starting now offers; `None` when skills are off. The first call
    /// takes what the runtime found when it was built, if that was a moment ago (a REPL's
    /// first turn may come minutes later: it looks again, trust may have changed).
    pub(super) fn skills_catalog(&self) -> Option<Arc<Catalog>> {
        self.catalog_now(true)
    }

    /// The skills now, without taking the ones found at build time from the first turn
    /// (for `tool_defs`: the REPL banner, `GET /api/tools`).
    pub(super) fn skills_catalog_peek(&self) -> Option<Arc<Catalog>> {
        self.catalog_now(false)
    }

    fn catalog_now(&self, take: bool) -> Option<Arc<Catalog>> {
        if !self.config.skills.enabled {
            return None;
        }
        let found = self.found_skills.lock().ok().and_then(|mut f| {
            let fresh = f.as_ref().is_some_and(|(at, _)| at.elapsed() < FRESH);
            match (fresh, take) {
                (true, true) => f.take(),
                (true, false) => f.clone(),
                (false, _) => None,
            }
        });
        match found {
            Some((_, catalog)) => Some(catalog),
            None => Some(Arc::new(Catalog::discover(
                &self.skill_places(),
                &self.home,
            ))),
        }
    }

    /// `skill_load` and `skill_list`, when a skill is offered.
    pub(super) fn skill_tools(&self, catalog: Option<&Arc<Catalog>>) -> Vec<Arc<dyn Tool>> {
        match catalog {
            Some(c) if c.offered().next().is_some() => crate::skills::tools::skill_tools(c.clone()),
            _ => Vec::new(),
        }
    }

    /// The turn's frozen block: the skills block, then the memory block.
    pub(super) fn turn_block(&self, catalog: Option<&Arc<Catalog>>) -> Option<String> {
        let limits = Limits {
            max_listed: usize::try_from(self.config.skills.max_listed).unwrap_or(usize::MAX),
            max_auto_chars: usize::try_from(self.config.skills.max_auto_chars)
                .unwrap_or(usize::MAX),
        };
        let skills = catalog.and_then(|c| block::render(c, limits));
        let parts: Vec<String> = [skills, self.memory_block()]
            .into_iter()
            .flatten()
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }
}
