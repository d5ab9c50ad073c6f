//! Entry points for fuzzing each parser of outside input, as odek runs it on what a web page,
//! a repository, a model endpoint, an MCP peer, Telegram or an HTTP client sends. The
//! libFuzzer targets in `fuzz/` call these (`make fuzz`); a unit test here runs each over
//! its seeds and thousands of mutations of them on every `make test`.

/// A parser and its entry point.
pub struct Target {
    /// The target's name (`fuzz/fuzz_targets/<name>.rs`, `fuzz/seeds/<name>/`).
    pub name: &'static str,
    /// Runs the parser on `data`; must neither panic nor stall.
    pub run: fn(&[u8]),
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "html_to_markdown",
        run: html_to_markdown,
    },
    Target {
        name: "skill_front_matter",
        run: skill_front_matter,
    },
    Target {
        name: "model_answer",
        run: crate::llm::fuzz_answer,
    },
    Target {
        name: "mcp_message",
        run: crate::mcp_client::fuzz_message,
    },
    Target {
        name: "telegram_updates",
        run: crate::telegram::fuzz_updates,
    },
    Target {
        name: "serve_bodies",
        run: crate::serve::fuzz_request_bodies,
    },
];

/// Runs the target called `name` on `data`, timed: a new slowest input is reported on stderr
/// (`slowest <name>: <ms> ms, <bytes> bytes`). Unknown names do nothing.
pub fn run(name: &str, data: &[u8]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SLOWEST_MICROS: AtomicU64 = AtomicU64::new(0);
    let Some(target) = TARGETS.iter().find(|t| t.name == name) else {
        return;
    };
    let started = std::time::Instant::now();
    (target.run)(data);
    let took = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    if took > SLOWEST_MICROS.fetch_max(took, Ordering::Relaxed) {
        eprintln!(
            "slowest {name}: {:.3} ms, {} bytes",
            took as f64 / 1000.0,
            data.len()
        );
    }
}

/// A page as `web_fetch` converts it (lossy UTF-8, at most the download cap).
pub fn html_to_markdown(data: &[u8]) {
    let data = &data[..data.len().min(crate::tools::web::MAX_DOWNLOAD_BYTES)];
    let text = String::from_utf8_lossy(data);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let _ = crate::tools::web::html_to_markdown(&text, deadline);
}

/// A `SKILL.md` as the catalog reads it (the size cap of a skill file applies first), and
/// the same text as an agent file (whose front matter, when not YAML, is read line by line)
/// and as a custom command's file, its body expanded with arguments.
pub fn skill_front_matter(data: &[u8]) {
    let cap = usize::try_from(crate::skills::frontmatter::MAX_SKILL_FILE_BYTES).unwrap_or(0);
    let Ok(text) = std::str::from_utf8(&data[..data.len().min(cap)]) else {
        return;
    };
    let _ = crate::skills::frontmatter::parse(text, "fuzzed");
    let _ = crate::skills::frontmatter::declared_name(text);
    let _ = crate::agents::file::parse(text, "fuzzed");
    let _ = crate::commands::file::parse(text.as_bytes());
    let _ = crate::commands::expand::expand(text, "one \"two three\" four");
}

#[cfg(test)]
mod tests;
