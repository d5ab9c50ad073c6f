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
        let done = self.setup.process.block_on(until_ctrl_c(
            runtime.compact(&self.session, focus, &cancel),
            &cancel,
        ));
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

/// Runs `work`, cancelling `cancel` on Ctrl-C (the line editor is not reading, so it comes as
/// SIGINT). The handler is in place before `work` is first polled, so a Ctrl-C sent once the
/// request has left is never missed.
async fn until_ctrl_c<T>(
    work: impl std::future::Future<Output = T>,
    cancel: &tokio_util::sync::CancellationToken,
) -> T {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).ok();
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            got = async { interrupt.as_mut()?.recv().await }, if interrupt.is_some() => {
                if got.is_some() {
                    cancel.cancel();
                }
                interrupt = None;
            }
            done = &mut work => return done,
        }
    }
}
