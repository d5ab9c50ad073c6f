//! What a panic prints. Release builds abort on a panic (`panic = "abort"`, Cargo.toml): no
//! unwinding, so no landing pads in the binary. Before the process ends, this hook says what
//! happened in one line a user can report; the session is saved up to its last tool batch (the
//! engine persists after every batch). Builds that unwind (tests, debug) keep Rust's hook, and
//! there a panicking tool still becomes an error result (`engine::batch`).

/// Installs the hook, in builds that abort on a panic.
pub fn install() {
    if cfg!(panic = "abort") {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            eprintln!("\n{}", report(info));
            if std::env::var_os("RUST_BACKTRACE").is_some() {
                default(info);
            }
        }));
    }
}

/// `odek: internal error: MESSAGE (at FILE:LINE) …`.
fn report(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    let place = info
        .location()
        .map(|l| format!(" (at {}:{})", l.file(), l.line()))
        .unwrap_or_default();
    format!(
        "odek: internal error: {message}{place}. This is a bug in odek {}; please report it (RUST_BACKTRACE=1 shows where it came from). Sessions are saved up to their last tool batch.",
        env!("CARGO_PKG_VERSION")
    )
}
