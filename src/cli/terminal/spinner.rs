//! The spinner: a thread that draws a frame every 100 ms while something is awaited for longer
//! than a blink, and the clearing of its line before anything else is written.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::state::State;

pub(super) const FRAMES: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
pub(super) const ASCII_FRAMES: &[&str] = &["-", "\\", "|", "/"];

pub(super) fn clear_spinner(st: &mut State) {
    if st.spinner_drawn {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
        let _ = std::io::stderr().flush();
        st.spinner_drawn = false;
    }
}

pub(super) fn spawn_spinner(
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    frames: &'static [&'static str],
) {
    let _ = std::thread::Builder::new()
        .name("odek-spinner".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
                let Some((label, since)) = st.spinner.clone() else {
                    continue;
                };
                // Above the REPL's prompt there is no line of its own to draw on.
                if super::sink::routed() {
                    continue;
                }
                // Show the spinner only for waits longer than a blink.
                if since.elapsed() < Duration::from_millis(300) {
                    continue;
                }
                st.frame = (st.frame + 1) % frames.len();
                let frame = frames[st.frame];
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[2K{frame} {label} {:.0}s",
                    since.elapsed().as_secs_f64()
                );
                let _ = err.flush();
                st.spinner_drawn = true;
            }
        });
}
