//! Named sub-agents through the binary: `odek agents list|show|trust|untrust` over a user's
//! agent, a project's and a Claude Code file used unchanged, with trust by the file's bytes.

use std::path::{Path, PathBuf};

use crate::support::*;
use serde_json::Value;

/// A file as Claude Code's `/agents` writes it.
const CLAUDE_AGENT: &str = "---\n\
name: code-reviewer\n\
description: Expert code review specialist. Use proactively after writing code.\n\
tools: Read, Grep, Glob\n\
model: inherit\n\
color: blue\n\
---\n\
\n\
You are a senior code reviewer ensuring high standards of code quality.\n";

fn write(path: PathBuf, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, text).expect("write");
    path
}

/// A sandbox with a user's agent, a project's and Claude Code's.
fn three_agents() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    write(
        sb.home.join("agents/planner.md"),
        "---\nname: planner\ndescription: Plans the work.\nmodel: sonnet\nmax_iter: 7\n---\nYou plan.\n",
    );
    write(
        sb.work.join(".odek/agents/fixer.md"),
        "---\nname: fixer\ndescription: Fixes bugs.\ntools: [read_file, Edit, \"Bash(cargo test:*)\"]\nprovider: anthropic\nmodel: haiku\ntrust_level: trusted\n---\nYou fix bugs.\n",
    );
    let claude = write(
        sb.work.join(".claude/agents/code-reviewer.md"),
        CLAUDE_AGENT,
    );
    (sb, claude)
}

fn odek_agents(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.arg("agents").args(args);
    cmd.output().expect("runs")
}

fn listed(sb: &Sandbox) -> Vec<Value> {
    let out = odek_agents(sb, &["list", "--json"]);
    assert!(out.status.success(), "{}", show(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("json");
    json["agents"].as_array().expect("agents").clone()
}

fn named<'a>(agents: &'a [Value], name: &str) -> &'a Value {
    agents
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no agent {name} in {agents:?}"))
}

#[test]
fn list_shows_a_users_a_projects_and_a_claude_code_agent_with_their_standing() {
    let (sb, _) = three_agents();
    let agents = listed(&sb);
    assert_eq!(agents.len(), 3, "{agents:?}");
    let names: Vec<&str> = agents.iter().filter_map(|a| a["name"].as_str()).collect();
    assert_eq!(
        names,
        ["code-reviewer", "fixer", "planner"],
        "sorted by name"
    );

    let planner = named(&agents, "planner");
    assert_eq!(planner["source"], "user");
    assert_eq!(planner["trusted"], true);
    assert_eq!(
        planner["tools"],
        Value::Null,
        "no tools: all the parent may give"
    );
    assert_eq!(planner["max_iter"], 7);
    assert_eq!(planner["model"], "sonnet");
    assert_eq!(
        planner["model_used"],
        Value::Null,
        "sonnet means nothing off Anthropic"
    );

    let fixer = named(&agents, "fixer");
    assert_eq!(fixer["source"], "project");
    assert_eq!(fixer["trusted"], false);
    assert!(
        fixer["why_not"]
            .as_str()
            .unwrap()
            .contains("odek agents trust fixer")
    );
    assert_eq!(
        fixer["tools"],
        serde_json::json!(["read_file", "patch", "batch_patch", "shell", "background"])
    );
    assert_eq!(
        fixer["model_used"], "claude-haiku-4-5",
        "its own provider is anthropic"
    );
    assert_eq!(fixer["trust_level"], "trusted");
    assert!(
        fixer["notes"][0]
            .as_str()
            .unwrap()
            .contains("danger policy")
    );

    let reviewer = named(&agents, "code-reviewer");
    assert_eq!(reviewer["source"], "project (.claude)");
    assert_eq!(reviewer["trusted"], false);
    assert_eq!(
        reviewer["tools"],
        serde_json::json!(["read_file", "batch_read", "search_files", "glob"])
    );
    assert_eq!(reviewer["model"], "inherit");
    assert_eq!(reviewer["model_used"], Value::Null);
}

#[test]
fn trust_lets_a_project_agent_run_until_its_bytes_change() {
    let (sb, claude) = three_agents();
    let trusted = |sb: &Sandbox| named(&listed(sb), "code-reviewer")["trusted"].clone();
    assert_eq!(trusted(&sb), false);

    let out = odek_agents(&sb, &["trust", "code-reviewer"]);
    assert!(out.status.success(), "{}", show(&out));
    assert!(stdout(&out).contains("Trusted agent code-reviewer"));
    assert!(sb.home.join("agents-trust.json").exists());
    assert_eq!(trusted(&sb), true);

    // One byte more and it needs trust again.
    write(claude.clone(), &format!("{CLAUDE_AGENT} "));
    let agents = listed(&sb);
    let reviewer = named(&agents, "code-reviewer");
    assert_eq!(reviewer["trusted"], false);
    assert!(
        reviewer["why_not"]
            .as_str()
            .unwrap()
            .contains("changed since")
    );

    assert!(
        odek_agents(&sb, &["trust", "code-reviewer"])
            .status
            .success()
    );
    assert_eq!(trusted(&sb), true);
    let out = odek_agents(&sb, &["untrust", "code-reviewer"]);
    assert!(
        stdout(&out).contains("No longer trusting"),
        "{}",
        show(&out)
    );
    assert_eq!(trusted(&sb), false);

    let out = odek_agents(&sb, &["trust", "planner"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("trusted without a record"),
        "{}",
        show(&out)
    );
    let out = odek_agents(&sb, &["trust", "nobody"]);
    assert!(
        stderr(&out).contains("no agent named \"nobody\""),
        "{}",
        show(&out)
    );
}

#[test]
fn show_prints_every_field_and_the_whole_prompt() {
    let (sb, claude) = three_agents();
    let out = odek_agents(&sb, &["show", "code-reviewer"]);
    assert!(out.status.success(), "{}", show(&out));
    let text = stdout(&out);
    for line in [
        "name: code-reviewer",
        &format!("file: {}", claude.display()),
        "source: project (.claude)",
        "tools: read_file, batch_read, search_files, glob",
        "model: the parent's (inherit)",
        "other keys (ignored): color",
        "You are a senior code reviewer ensuring high standards of code quality.",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    assert!(text.contains("status: a project's agent chooses tools and models"));
}

#[test]
fn a_broken_file_is_a_warning_and_a_project_agent_hides_the_users_once_trusted() {
    let (sb, _) = three_agents();
    write(sb.work.join(".odek/agents/bad.md"), "no front matter\n");
    write(
        sb.work.join(".odek/agents/planner.md"),
        "---\nname: planner\ndescription: The project's planner.\n---\nPlan our way.\n",
    );
    // Claude Code's generated descriptions are often not YAML (`Examples: … user: "…"`).
    write(
        sb.work.join(".claude/agents/triage.md"),
        "---\nname: triage\ndescription: Use it for new issues. Examples:\n<example>\nuser: \"triage #4\"\n</example>\ntools: Read\n---\nTriage.\n",
    );
    let agents = listed(&sb);
    let triage = named(&agents, "triage");
    assert!(
        triage["description"]
            .as_str()
            .unwrap()
            .contains("user: \"triage #4\"")
    );
    assert_eq!(
        triage["tools"],
        serde_json::json!(["read_file", "batch_read"])
    );
    assert!(
        triage["notes"][0]
            .as_str()
            .unwrap()
            .contains("read line by line")
    );
    let out = odek_agents(&sb, &["list"]);
    assert!(out.status.success(), "{}", show(&out));
    let err = stderr(&out);
    assert!(
        err.contains("bad.md") && err.contains("front matter"),
        "{err}"
    );
    assert!(err.contains("is hidden by"), "{err}");
    let planner = |sb: &Sandbox| named(&listed(sb), "planner")["source"].clone();
    assert_eq!(
        planner(&sb),
        "user",
        "an untrusted project file never hides the user's"
    );
    assert!(odek_agents(&sb, &["trust", "planner"]).status.success());
    assert_eq!(planner(&sb), "project");
    let shown = stdout(&odek_agents(&sb, &["show", "planner"]));
    assert!(shown.contains("hides: ") && shown.contains(&path_of(&sb.home, "agents/planner.md")));
}

fn path_of(dir: &Path, relative: &str) -> String {
    dir.join(relative).display().to_string()
}
