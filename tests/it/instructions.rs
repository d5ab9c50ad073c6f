//! Layered instructions through the real binary (docs/INSTRUCTIONS.md): the global file, the
//! repository's top down to the working directory (`CLAUDE.md` where no `AGENTS.md` is), the
//! cap's warning, a nested file attached once to the first read below its folder, a
//! sub-agent's chain, `--no-agents`, and what `odek config` lists.

use serde_json::{Value, json};

use crate::support::keyed::{KeyedServer, first_user};
use crate::support::*;

/// A repository at the sandbox's work folder (a `.git` folder marks its top) with the global
/// file, the top's `AGENTS.md` and `pkg/CLAUDE.md`; the folder `pkg` to work in.
fn repository(sb: &Sandbox) -> std::path::PathBuf {
    std::fs::create_dir_all(sb.work.join(".git")).expect("git");
    std::fs::create_dir_all(sb.work.join("pkg")).expect("pkg");
    std::fs::write(sb.home.join("AGENTS.md"), "Global: answer in English.\n").expect("w");
    std::fs::write(sb.work.join("AGENTS.md"), "Root: run make test.\n").expect("w");
    std::fs::write(sb.work.join("pkg/CLAUDE.md"), "Pkg: no unsafe.\n").expect("w");
    sb.work.join("pkg")
}

fn content(message: &Value) -> &str {
    message["content"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_a_sub_folder_the_global_root_and_sub_folder_files_come_in_that_order() {
    let server = ScriptedServer::start(vec![
        tools(&[("read_file", json!({"path": "CLAUDE.md"}))]),
        text("done"),
    ])
    .await;
    let sb = Sandbox::new();
    let pkg = repository(&sb);
    let mut cmd = sb.odek(&server.base_url());
    cmd.current_dir(&pkg)
        .args(["run", "--no-stream", "check the rules"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    let sent = messages(&requests[0]);
    assert_eq!(sent.len(), 5, "system, global, root, pkg, task: {sent:#?}");
    assert!(
        content(&sent[1]).starts_with(
            "[Injected context: the user's own instructions from ~/odek-home/AGENTS.md, for every project;"
        ),
        "{}",
        content(&sent[1])
    );
    assert!(content(&sent[1]).ends_with("Global: answer in English."));
    assert!(
        content(&sent[2]).starts_with("[Injected context: project instructions from ../AGENTS.md;")
    );
    assert!(content(&sent[2]).ends_with("Root: run make test."));
    assert!(
        content(&sent[3]).starts_with("[Injected context: project instructions from ./CLAUDE.md;"),
        "CLAUDE.md where no AGENTS.md is"
    );
    assert!(content(&sent[3]).ends_with("Pkg: no unsafe."));
    assert_eq!(content(&sent[4]), "check the rules");
    // The blocks are the same bytes in the next request (the prompt cache holds).
    let next = messages(&requests[1]);
    assert_eq!(next[..4], sent[..4]);

    let mut config = sb.odek(&server.base_url());
    config.current_dir(&pkg).arg("config");
    let out = output(config).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout(&out).contains("instructions:   ~/odek-home/AGENTS.md, ../AGENTS.md, ./CLAUDE.md\n"),
        "{}",
        show(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_instructions_max_kb_the_nearest_file_wins_and_a_warning_names_the_rest() {
    let server = ScriptedServer::start(vec![text("ok")]).await;
    let sb = Sandbox::new();
    let pkg = repository(&sb);
    std::fs::write(pkg.join("AGENTS.md"), "n".repeat(1010)).expect("w");
    sb.global_config(r#"{"instructions": {"max_kb": 1}}"#);
    let mut cmd = sb.odek(&server.base_url());
    cmd.current_dir(&pkg).args(["run", "x"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let sent = messages(&server.requests()[0]);
    let texts: Vec<&str> = sent.iter().map(content).collect();
    assert_eq!(sent.len(), 3, "system, the nearest file, task: {texts:#?}");
    assert!(texts[1].starts_with("[Injected context: project instructions from ./AGENTS.md;"));
    assert!(
        stderr(&out).contains(
            "instruction files over instructions.max_kb (1 KiB) together; left out: ~/odek-home/AGENTS.md, ../AGENTS.md"
        ),
        "{}",
        show(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_file_is_attached_to_the_first_read_below_its_folder_once_a_session() {
    let server = ScriptedServer::start(vec![
        tools(&[("read_file", json!({"path": "lib/a.rs"}))]),
        tools(&[("batch_read", json!({"files": [{"path": "lib/b.rs"}]}))]),
        text("read both"),
        tools(&[("read_file", json!({"path": "lib/a.rs"}))]),
        text("read again"),
    ])
    .await;
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.work.join("lib")).expect("lib");
    std::fs::write(sb.work.join("lib/AGENTS.md"), "Lib: keep it no_std.\n").expect("w");
    std::fs::write(sb.work.join("lib/a.rs"), "fn a() {}\n").expect("w");
    std::fs::write(sb.work.join("lib/b.rs"), "fn b() {}\n").expect("w");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--no-stream", "read lib"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    assert_eq!(
        messages(&requests[0]).len(),
        2,
        "no instructions at the start"
    );
    let results = tool_results(&requests[2]);
    assert_eq!(results.len(), 2);
    let header = "\n\n[Project instructions from ./lib/AGENTS.md, for the files under ./lib/;";
    let (wrapped, note) = results[0]
        .split_once(header)
        .expect("attached to the first read");
    assert!(unwrap_untrusted(wrapped).contains("fn a() {}"));
    assert!(note.ends_with("]\n\nLib: keep it no_std."), "{note}");
    assert!(
        !results[1].contains("Project instructions"),
        "{}",
        results[1]
    );

    // The session resumed: its transcript holds the file, so it is not attached again.
    let mut again = sb.odek(&server.base_url());
    again.args(["continue", "--no-stream", "read a again"]);
    let out = output(again).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    let last = tool_results(&requests[4]);
    assert_eq!(last.len(), 3, "{last:#?}");
    assert!(!last[2].contains("Project instructions"), "{}", last[2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_agents_reads_no_instruction_file_and_config_says_so() {
    let server = ScriptedServer::start(vec![
        tools(&[("read_file", json!({"path": "lib/a.rs"}))]),
        text("ok"),
    ])
    .await;
    let sb = Sandbox::new();
    let pkg = repository(&sb);
    std::fs::create_dir_all(pkg.join("lib")).expect("lib");
    std::fs::write(pkg.join("lib/AGENTS.md"), "Lib rules.\n").expect("w");
    std::fs::write(pkg.join("lib/a.rs"), "fn a() {}\n").expect("w");
    let mut cmd = sb.odek(&server.base_url());
    cmd.current_dir(&pkg)
        .args(["run", "--no-stream", "--no-agents", "x"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    assert_eq!(messages(&requests[0]).len(), 2, "system and task only");
    assert!(!tool_results(&requests[1])[0].contains("Project instructions"));

    let mut config = sb.odek(&server.base_url());
    config.current_dir(&pkg).args(["config", "--no-agents"]);
    let out = output(config).await;
    assert!(
        stdout(&out).contains("instructions:   none read (no_agents)\n"),
        "{}",
        show(&out)
    );
}

/// A parent whose model delegates one task; the child answers at once.
fn delegating() -> crate::support::keyed::Answer {
    std::sync::Arc::new(|first: String, request: Value| {
        Box::pin(async move {
            let results = messages(&request)
                .iter()
                .filter(|m| m["role"] == "tool")
                .count();
            if first.starts_with("delegate") && results == 0 {
                return json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "delegate_tasks",
                     "arguments": json!({"tasks": [{"goal": "child: look around"}]}).to_string()}}]});
            }
            json!({"role": "assistant", "content": "done"})
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_reads_the_chain_of_its_folder_unless_the_parent_read_none() {
    let server = KeyedServer::start(delegating()).await;
    let sb = Sandbox::new();
    let pkg = repository(&sb);
    sb.global_config(r#"{"dangerous": {"classes": {"system_write": "allow"}}}"#);
    for (flags, expected) in [(vec![], 3), (vec!["--no-agents"], 0)] {
        let mut cmd = sb.odek(&server.base_url());
        cmd.current_dir(&pkg)
            .env("ODEK_STREAM", "false")
            .args(["run", "--ephemeral"])
            .args(&flags)
            .arg("delegate it");
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let requests = server.requests();
        let child = requests
            .iter()
            .rev()
            .find(|r| first_user(r).contains("child: look around"))
            .unwrap_or_else(|| panic!("the child asked: {}\n{requests:#?}", show(&out)));
        let injected: Vec<String> = messages(child)
            .iter()
            .filter(|m| content(m).starts_with("[Injected context:"))
            .map(|m| content(m).to_string())
            .collect();
        assert_eq!(injected.len(), expected, "{flags:?}: {injected:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repls_info_names_the_files_its_session_holds_nested_ones_once_attached() {
    let server = ScriptedServer::start(vec![
        tools(&[("read_file", json!({"path": "lib/a.rs"}))]),
        text("read it"),
    ])
    .await;
    let sb = Sandbox::new();
    let pkg = repository(&sb);
    std::fs::create_dir_all(pkg.join("lib")).expect("lib");
    std::fs::write(pkg.join("lib/AGENTS.md"), "Lib rules.\n").expect("w");
    std::fs::write(pkg.join("lib/a.rs"), "fn a() {}\n").expect("w");
    let mut cmd = sb.odek(&server.base_url());
    cmd.current_dir(&pkg).env("TERM", "xterm").arg("repl");
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_string("odek 1> ")?;
        p.send_line("/info")?;
        p.exp_string("Instructions: ~/odek-home/AGENTS.md, ../AGENTS.md, ./CLAUDE.md\r\n")?;
        p.exp_string("odek 1> ")?;
        p.send_line("read lib")?;
        p.exp_string("read it")?;
        p.exp_string("odek 2> ")?;
        p.send_line("/info")?;
        p.exp_string(
            "Instructions: ~/odek-home/AGENTS.md, ../AGENTS.md, ./CLAUDE.md, ./lib/AGENTS.md (attached)\r\n",
        )?;
        p.exp_string("odek 2> ")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("joined")
    .expect("the REPL answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_with_a_folder_in_it_is_refused_before_anything_runs() {
    let sb = Sandbox::new();
    sb.global_config(r#"{"instructions": {"fallbacks": ["CLAUDE.md", "../secrets.md"]}}"#);
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.arg("config");
    let out = output(cmd).await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "a configuration error: {}",
        show(&out)
    );
    assert!(
        stderr(&out).contains(
            "instructions.fallbacks: \"../secrets.md\" is not a plain file name: give names like \"CLAUDE.md\", without `/`"
        ),
        "{}",
        show(&out)
    );
}
