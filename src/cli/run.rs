//! `odek run`: one task to a final answer.

use clap::Args;

use super::Exit;
use super::flags::TurnFlags;
use super::turn::{Setup, exit_for, read_task, run_with_interrupts, tokio_runtime};
use crate::engine::RunError;
use crate::prompt::{initial_messages, read_context_files};

/// Arguments of `odek run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    turn: TurnFlags,
    /// The task; words are joined with spaces, `-` reads it from stdin, `--` ends the flags
    #[arg(value_name = "TASK", required = true)]
    task: Vec<String>,
}

/// Runs `odek run`.
pub fn run(args: RunArgs) -> anyhow::Result<Exit> {
    let task = read_task(&args.task)?;
    let setup = Setup::new(&args.turn)?;
    let config = &setup.resolved.config;
    let files = read_context_files(&args.turn.ctx, &setup.cwd).map_err(anyhow::Error::msg)?;
    let messages = initial_messages(config, &setup.cwd, &files, &task);
    let rt = tokio_runtime()?;
    let engine = setup.engine(&args.turn, setup.terminal.clone())?;
    let outcome = rt.block_on(run_with_interrupts(&engine, messages, None));
    setup.terminal.shutdown();
    let exit = exit_for(&outcome.result);
    match &outcome.result {
        Ok(answer) => {
            setup.terminal.print_answer(answer);
            if outcome.partial {
                setup.terminal.info(&setup.terminal.style().yellow(&format!(
                    "odek: reached max iterations ({}); the answer above is a partial summary",
                    config.max_iterations
                )));
            }
        }
        Err(RunError::Cancelled) => setup.terminal.line("odek: interrupted"),
        Err(e @ RunError::Budget { .. }) => setup
            .terminal
            .line(&format!("{} {e}", setup.terminal.style().red("odek:"))),
        Err(e) => return Err(anyhow::anyhow!("{e}")),
    }
    Ok(exit)
}
