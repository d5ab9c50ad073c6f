//! `odek usage [--since DAYS] [--json]`.

use clap::Args;

use super::Exit;
use super::session_cmd::local_session_store;

/// Arguments of `odek usage`.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// Only runs of the last DAYS days (default: every saved run)
    #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u64).range(1..=36_500))]
    since: Option<u64>,
    /// Print the report as one JSON object (the body of GET /api/usage)
    #[arg(long)]
    json: bool,
}

/// Runs `odek usage`.
pub fn run(args: UsageArgs) -> crate::error::Fallible<Exit> {
    let store = local_session_store();
    let now = crate::util::timestamp::now_unix_seconds();
    let (report, problems) = crate::usage::rollup(&store, args.since, now)?;
    for p in &problems {
        eprintln!("odek: warning: skipped {p}");
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", crate::usage::render_text(&report));
    }
    Ok(Exit::Success)
}
