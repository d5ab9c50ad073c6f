//! Where the terminal's writes go while the REPL reads a line during a turn: through the
//! line editor's printer, which prints above the prompt line and draws the prompt again.
//! Text goes to it by whole lines (a line still being streamed waits for its end), so the
//! prompt never cuts an answer line in two. With no printer set, writes go to the streams
//! as always.

use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, PoisonError};

/// Prints one chunk of text above the prompt.
pub type PrintFn = Box<dyn FnMut(String) + Send>;

struct Route {
    lines: Sender<String>,
    partial: String,
    printer: std::thread::JoinHandle<()>,
}

static ROUTE: Mutex<Option<Route>> = Mutex::new(None);

/// From now on every terminal write goes to `print` (on a thread of its own, in order:
/// a writer never waits for the screen); `None` goes back to the streams once what was sent
/// (and what was left of a line) is printed.
pub fn route_to(print: Option<PrintFn>) {
    let mut route = ROUTE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(old) = route.take() {
        if !old.partial.is_empty() {
            let _ = old.lines.send(old.partial);
        }
        drop(old.lines);
        let _ = old.printer.join();
    }
    let Some(print) = print else {
        return;
    };
    let (tx, rx) = channel::<String>();
    let spawned = std::thread::Builder::new()
        .name("odek-printer".into())
        .spawn(move || rx.iter().for_each(print));
    if let Ok(printer) = spawned {
        *route = Some(Route {
            lines: tx,
            partial: String::new(),
            printer,
        });
    }
}

/// True while writes go to the printer.
pub fn routed() -> bool {
    ROUTE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .is_some()
}

/// Sends `text` to the printer when one is set (`whole`: at once, with what waited of a
/// line before it; else by whole lines); false when there is none (the caller writes).
pub(super) fn write(text: &str, whole: bool) -> bool {
    let mut route = ROUTE.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(route) = route.as_mut() else {
        return false;
    };
    if let Some(ready) = ready(&mut route.partial, text, whole) {
        let _ = route.lines.send(ready);
    }
    true
}

/// Adds `text` to what waits of a line and takes out what is ready to print: everything
/// when `whole`, else up to the last line's end.
fn ready(partial: &mut String, text: &str, whole: bool) -> Option<String> {
    partial.push_str(text);
    let end = match whole {
        true => partial.len(),
        false => partial.rfind('\n').map_or(0, |i| i + 1),
    };
    (end > 0).then(|| partial.drain(..end).collect())
}

/// A writer for prompts: what it is given goes to the printer when one is set (a flush
/// prints an unfinished line, the question before its answer), else to `inner`.
pub(super) struct Out<W: std::io::Write>(pub W);

impl<W: std::io::Write> std::io::Write for Out<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if write(&String::from_utf8_lossy(buf), false) {
            return Ok(buf.len());
        }
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if write("", true) {
            return Ok(());
        }
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::ready;

    #[test]
    fn text_goes_out_by_whole_lines_and_a_flush_takes_the_rest() {
        let mut partial = String::new();
        assert_eq!(ready(&mut partial, "The answ", false), None);
        assert_eq!(
            ready(&mut partial, "er\nand more", false).as_deref(),
            Some("The answer\n")
        );
        assert_eq!(ready(&mut partial, "", true).as_deref(), Some("and more"));
        assert_eq!(ready(&mut partial, "", true), None);
    }
}
