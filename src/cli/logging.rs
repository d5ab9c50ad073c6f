//! `tracing` on stderr for the commands that log.

/// Sets up `tracing` on stderr: warnings by default, debug with `-vv`, or `RUST_LOG`.
pub(super) fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = if verbose >= 2 {
        "odek=debug"
    } else {
        "odek=warn"
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
