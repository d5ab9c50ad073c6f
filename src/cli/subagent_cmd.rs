//! `odek subagent --task FILE`: one delegated task, run by the parent's `delegate_tasks`
//! (hidden from the help: people do not run it). Its own exit contract: 0 whenever the
//! envelope was written (its status says how the task went), 2 when the time limit ended
//! the run, 3 when the task file or the configuration could not be used.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::subagent_child::{prepare, run as run_child};
use crate::subagent::{EXIT_CONTRACT, Envelope};

/// Arguments of `odek subagent`.
#[derive(Debug, Args)]
pub struct SubagentArgs {
    /// The task file the parent wrote (JSON, private; the parent removes it)
    #[arg(long, value_name = "FILE")]
    task: PathBuf,
}

/// Runs `odek subagent`: events on stdout as the task runs, then the envelope.
pub fn run(args: SubagentArgs) -> ExitCode {
    super::logging::init_tracing(0);
    let prepared = match prepare(&args.task) {
        Ok(p) => p,
        Err(e) => return finish(&Envelope::contract_error(&e.to_string()), EXIT_CONTRACT),
    };
    match run_child(prepared) {
        Ok(envelope) => {
            let code = envelope.exit_code();
            finish(&envelope, code)
        }
        Err(e) => finish(&Envelope::contract_error(&e.to_string()), EXIT_CONTRACT),
    }
}

/// Writes the envelope as the last line of stdout and exits with `code`.
fn finish(envelope: &Envelope, code: u8) -> ExitCode {
    let line = serde_json::to_string(envelope).unwrap_or_else(|_| {
        r#"{"status":"error","error":"the envelope could not be written"}"#.to_string()
    });
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    ExitCode::from(code)
}
