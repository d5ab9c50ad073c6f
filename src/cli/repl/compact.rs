//! `/compact [what to keep]`: the conversation before the last turns summarised by the
//! model (docs/COMPACTION.md).

use super::Repl;

impl Repl {
    /// `/compact [what to keep]`: asks the runtime for the summary, then says what it did.
    pub(super) fn compact(&mut self, line: &str) {
        let focus = line
            .trim()
            .split_once(char::is_whitespace)
            .map(|(_, rest)| rest.trim())
            .filter(|rest| !rest.is_empty());
        let runtime = self.setup.runtime.clone();
        let t = self.setup.terminal.clone();
        t.info("odek: summarising the conversation…");
        let cancel = tokio_util::sync::CancellationToken::new();
        // Ctrl-C stops the summary (the line editor is not reading: it comes as a signal).
        let stop = cancel.clone();
        let watcher = self.setup.process.handle().spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                stop.cancel();
            }
        });
        let done = self
            .setup
            .process
            .block_on(runtime.compact(&self.session, focus, &cancel));
        watcher.abort();
        match done {
            Ok(outcome) => t.info(&outcome.line()),
            Err(e) => {
                let message = e.to_string();
                let shown = crate::text::visible(&message, false);
                t.line(&format!("{} {shown}", t.style().red("odek:")));
                if let Some(hint) = crate::error::Classified::hint(&e) {
                    t.line(&format!("  {}", t.style().dim(&format!("hint: {hint}"))));
                }
            }
        }
    }
}
