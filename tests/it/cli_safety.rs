//! Safety through the real binary: the Landlock sandbox under `shell`, secret reads, and the
//! headless policy flags (`--allow`, `--yolo`, `ODEK_DANGEROUS_ACTION`).
//!
//! Every test here runs odek with HOME, TMPDIR, the working directory and ODEK_HOME in
//! separate folders.

use std::path::{Path, PathBuf};

use crate::support::*;
use serde_json::{Value, json};

/// A test's folders: the user's home apart from the odek home, the working directory and
/// the temporary directory.
struct Layout {
    sb: Sandbox,
    user_home: PathBuf,
}

impl Layout {
    fn new() -> Self {
        let sb = Sandbox::new();
        let user_home = sb.dir.path().join("user-home");
        std::fs::create_dir_all(&user_home).expect("home");
        Layout { sb, user_home }
    }

    fn odek(&self, base_url: &str) -> std::process::Command {
        let mut cmd = self.sb.odek(base_url);
        cmd.env("HOME", &self.user_home);
        cmd
    }

    fn outside(&self) -> PathBuf {
        self.user_home.join("outside")
    }

    fn odek_config(&self) -> PathBuf {
        self.sb.home.join("config.json")
    }

    fn session(&self) -> Value {
        only_session(&self.sb)
    }
}

fn shell(command: &str) -> (&'static str, Value) {
    ("shell", json!({"command": command}))
}

/// True when odek said it runs without the sandbox on this kernel.
/// True when odek said the kernel offers no Landlock. Where the sandbox must exist — CI
/// runs with `ODEK_REQUIRE_LANDLOCK=1`, and its kernels have Landlock — that fails the test
/// instead of letting it pass on the warning alone.
fn sandbox_unavailable(out: &std::process::Output) -> bool {
    let missing = String::from_utf8_lossy(&out.stderr).contains("run without the sandbox");
    assert!(
        !(missing && std::env::var_os("ODEK_REQUIRE_LANDLOCK").is_some()),
        "ODEK_REQUIRE_LANDLOCK is set but odek ran without the sandbox:\n{}",
        show(out)
    );
    missing
}

const ALLOW_ALL: &str = r#"{"dangerous": {"action": "allow"}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_confines_shell_writes_even_when_the_policy_allows_them() {
    let l = Layout::new();
    l.sb.global_config(ALLOW_ALL);
    let config_before = read(l.odek_config());
    let outside = l.outside();
    let config = l.odek_config();
    let server = ScriptedServer::start(vec![
        tools(&[shell(&format!("echo pwned > {}", outside.display()))]),
        tools(&[shell(&format!("echo '{{}}' > {}", config.display()))]),
        tools(&[shell("echo kept > inside.txt && cat inside.txt")]),
        tools(&[shell(
            "echo scratch > \"$TMPDIR/scratch.txt\" && echo hi > /dev/null",
        )]),
        text("done"),
    ])
    .await;
    let events = l.sb.dir.path().join("events.jsonl");
    let mut cmd = l.odek(&server.base_url());
    cmd.arg("run")
        .arg("--events-jsonl")
        .arg(&events)
        .arg("write some files");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    if sandbox_unavailable(&out) {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.matches("without the sandbox").count(), 1, "{stderr}");
        eprintln!("Landlock is not available on this kernel: only the warning was checked");
        return;
    }
    let reqs = server.requests();
    let home_write = last_result(&reqs[1]);
    assert!(home_write.contains("Permission denied"), "{home_write}");
    assert!(home_write.contains("odek's sandbox"), "{home_write}");
    assert!(home_write.contains("--no-sandbox"), "{home_write}");
    assert!(!outside.exists(), "a write to $HOME went through");
    let config_write = last_result(&reqs[2]);
    assert!(config_write.contains("Permission denied"), "{config_write}");
    assert_eq!(
        read(&config),
        config_before,
        "the odek config was rewritten"
    );
    let inside = last_result(&reqs[3]);
    assert!(
        inside.contains("kept") && inside.contains("[exit code: 0]"),
        "{inside}"
    );
    assert_eq!(read(l.sb.work.join("inside.txt")), "kept\n");
    let scratch = last_result(&reqs[4]);
    assert!(scratch.contains("[exit code: 0]"), "{scratch}");
    assert_eq!(read(l.sb.tmp().join("scratch.txt")), "scratch\n");
    assert_eq!(l.session()["sandbox"], json!(true));
    let started: Value =
        serde_json::from_str(read(&events).lines().next().expect("an event")).expect("event JSON");
    assert_eq!(started["type"], "run_started");
    assert_eq!(started["data"]["sandbox"], json!(true), "{started}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_sandbox_turns_it_off_and_a_project_cannot() {
    let l = Layout::new();
    l.sb.global_config(ALLOW_ALL);
    l.sb.project_config(r#"{"sandbox": false, "sandbox_allow_write": ["/"]}"#);
    let write_home = format!("echo hi > {}", l.outside().display());
    let server = ScriptedServer::start(vec![tools(&[shell(&write_home)]), text("tried")]).await;
    let mut cmd = l.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "write home"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ignoring sandbox=false (a project may only turn the sandbox on)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("ignoring sandbox_allow_write (a project may not widen the sandbox)"),
        "{stderr}"
    );
    if !sandbox_unavailable(&out) {
        assert!(!l.outside().exists(), "the project turned the sandbox off");
    }

    server.clear();
    server.push(vec![tools(&[shell(&write_home)]), text("wrote")]);
    let mut cmd = l.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "--no-sandbox", "write home"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        read(l.outside()),
        "hi\n",
        "--no-sandbox lets the write through"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_keeps_a_sandboxed_session_sandboxed() {
    let l = Layout::new();
    l.sb.global_config(ALLOW_ALL);
    let server = ScriptedServer::start(vec![text("first")]).await;
    let mut cmd = l.odek(&server.base_url());
    cmd.args(["run", "hello"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    if sandbox_unavailable(&out) {
        assert_eq!(l.session()["sandbox"], json!(false));
        return;
    }
    assert_eq!(l.session()["sandbox"], json!(true));

    let write_home = format!("echo hi > {}", l.outside().display());
    server.clear();
    server.push(vec![tools(&[shell(&write_home)]), text("second")]);
    let mut cmd = l.odek(&server.base_url());
    cmd.args(["continue", "--no-sandbox", "write home"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("odek: session was sandboxed — enabling sandbox for this continuation"),
        "{stderr}"
    );
    assert!(!l.outside().exists(), "the continuation ran unsandboxed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_network_none_refuses_tcp() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let l = Layout::new();
    l.sb.global_config(r#"{"dangerous": {"action": "allow"}, "sandbox_network": "none"}"#);
    let connect = format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo connected");
    let server = ScriptedServer::start(vec![tools(&[shell(&connect)]), text("tried")]).await;
    let mut cmd = l.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "connect"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    if sandbox_unavailable(&out) {
        return;
    }
    let result = unwrap_untrusted(&tool_results(&server.requests()[1])[0]);
    assert!(!result.contains("connected"), "{result}");
    assert!(result.contains("refuses TCP connections"), "{result}");
    assert!(
        listener.accept().is_err(),
        "a connection reached the listener"
    );

    // With the network allowed the same command connects.
    l.sb.global_config(ALLOW_ALL);
    server.clear();
    server.push(vec![tools(&[shell(&connect)]), text("tried")]);
    let mut cmd = l.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "connect"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let last = server.requests().pop().expect("a request");
    let result = last_result(&last);
    assert!(result.contains("connected"), "{result}");
}

// ---------------------------------------------------------------------------------------
// Secret reads and the headless policy.

fn write_key(home: &Path) -> PathBuf {
    let ssh = home.join(".ssh");
    std::fs::create_dir_all(&ssh).expect("mkdir");
    let key = ssh.join("id_ed25519");
    std::fs::write(&key, "PRIVATE-KEY-MATERIAL-0123456789\n").expect("key");
    key
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_reads_ask_and_are_denied_without_a_terminal() {
    let l = Layout::new();
    let key = write_key(&l.user_home);
    let server = ScriptedServer::start(vec![
        tools(&[
            shell("cat ~/.ssh/id_ed25519"),
            ("read_file", json!({"path": key.display().to_string()})),
            shell("head -c 10 /etc/shadow"),
        ]),
        text("could not"),
    ])
    .await;
    let mut cmd = l.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "show me the key"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), 3);
    for result in &results {
        assert!(result.contains("operation denied"), "{result}");
        assert!(result.contains("secret_read"), "{result}");
        assert!(!result.contains("PRIVATE-KEY-MATERIAL"), "{result}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_flag_allows_one_class_only() {
    let l = Layout::new();
    let key = write_key(&l.user_home);
    let server = ScriptedServer::start(vec![
        tools(&[
            ("read_file", json!({"path": key.display().to_string()})),
            shell("pip install requests"),
        ]),
        text("read it"),
    ])
    .await;
    let mut cmd = l.odek(&server.base_url());
    cmd.args([
        "run",
        "--ephemeral",
        "--allow",
        "secret_read",
        "read the key",
    ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let results = tool_results(&server.requests()[1]);
    assert!(
        results[0].contains("PRIVATE-KEY-MATERIAL"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("operation denied"), "{}", results[1]);
    assert!(results[1].contains("install"), "{}", results[1]);

    let mut cmd = l.odek(&server.base_url());
    cmd.args(["run", "--allow", "sometimes", "x"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown danger class \"sometimes\""),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yolo_allows_all_but_blocked_loudly_and_is_recorded() {
    for (how, recorded) in [("flag", "--yolo"), ("env", "ODEK_DANGEROUS_ACTION=allow")] {
        let l = Layout::new();
        l.sb.global_config(r#"{"dangerous": {"classes": {"install": "deny"}}}"#);
        let server = ScriptedServer::start(vec![
            tools(&[
                shell("sh ./build.sh"),
                shell("brew install odek-test-nothing"),
                shell("rm -rf /"),
            ]),
            text("done"),
        ])
        .await;
        std::fs::write(l.sb.work.join("build.sh"), "echo built-ok\n").expect("script");
        let mut cmd = l.odek(&server.base_url());
        if how == "flag" {
            cmd.args(["run", "--yolo", "build"]);
        } else {
            cmd.env("ODEK_DANGEROUS_ACTION", "allow")
                .args(["run", "build"]);
        }
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{how}: {}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "odek: WARNING: {recorded}: every tool call runs without asking"
            )),
            "{how}: {stderr}"
        );
        let results = tool_results(&server.requests()[1]);
        assert!(results[0].contains("built-ok"), "{how}: {}", results[0]);
        assert!(
            !results[1].contains("operation denied"),
            "{how}: {}",
            results[1]
        );
        assert!(
            results[2].contains("operation denied by configuration"),
            "{how}: {}",
            results[2]
        );
        assert_eq!(l.session()["dangerous_override"], json!(recorded), "{how}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_config_shows_the_headless_policy_and_its_sources() {
    let l = Layout::new();
    let mut cmd = l.odek("http://127.0.0.1:9/v1");
    cmd.env("ODEK_DANGEROUS_ACTION", "deny").args([
        "config",
        "--json",
        "--allow",
        "install",
        "--no-sandbox",
    ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(rows["dangerous.action"]["value"], "deny");
    assert_eq!(
        rows["dangerous.action"]["source"],
        "env ODEK_DANGEROUS_ACTION"
    );
    assert_eq!(rows["dangerous.classes.install"]["value"], "allow");
    assert_eq!(rows["dangerous.classes.install"]["source"], "flag");
    assert_eq!(rows["sandbox"]["value"], false);
    assert_eq!(rows["sandbox"]["source"], "flag");
    assert_eq!(rows["dangerous_override"]["value"], Value::Null);

    let mut cmd = l.odek("http://127.0.0.1:9/v1");
    cmd.args(["config", "--json", "--yolo"]);
    let out = output(cmd).await;
    let rows: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(rows["dangerous.action"]["value"], "allow");
    assert_eq!(rows["dangerous_override"]["value"], "--yolo");
    assert_eq!(rows["dangerous_override"]["source"], "flag");

    let mut cmd = l.odek("http://127.0.0.1:9/v1");
    cmd.env("ODEK_DANGEROUS_ACTION", "sometimes")
        .args(["config"]);
    let out = output(cmd).await;
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ODEK_DANGEROUS_ACTION"), "{stderr}");
    assert!(stderr.contains("allow, deny or prompt"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_too_complex_to_read_is_blocked_even_with_yolo() {
    // 64 brace-expanded copies of a 200 KB substitution: more text to analyse than the
    // budget (8 × the command's length), so the gate refuses instead of guessing.
    let wide = format!(
        "echo {{a,b,c,d,e,f,g,h}}{{a,b,c,d,e,f,g,h}}`eval {{a,b}}{}`",
        "x/".repeat(100_000)
    );
    let l = Layout::new();
    let server = ScriptedServer::start(vec![tools(&[shell(&wide)]), text("done")]).await;
    let mut cmd = l.odek(&server.base_url());
    cmd.args(["run", "--yolo", "go"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let result = last_result(&server.requests()[1]);
    assert!(
        result.contains("operation denied by configuration: echo {a,b,c,d,e,f,g,h}")
            && result.ends_with("(risk: blocked — the command is too complex to be analysed)"),
        "{result}"
    );
}

// ---------------------------------------------------------------------------------------
// Issue 60, H2: a repository's git configuration is persistence.

/// Every write to a repository's git configuration but a few harmless keys is persistence:
/// `include.path` (whose file a plain write then fills with `core.fsmonitor`),
/// `includeIf.*.path`, merge drivers, `uploadpack`, `submodule.*.update`,
/// `protocol.ext.allow`, a renamed section, `git config set`, and a `write_file` anywhere
/// inside `.git/`. `git -c include.path=…` runs what it names. With local writes allowed and
/// nobody to ask, each is denied and `.git/config` is left as it was; `user.name` is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_configuration_writes_are_persistence() {
    let l = Layout::new();
    let work = &l.sb.work;
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(work)
        .status()
        .expect("git init");
    assert!(status.success());
    let config_before = read(work.join(".git/config"));
    let writes = [
        "git config --local include.path ../tools/git.cfg",
        "git config includeIf.gitdir:/.path tools/git.cfg",
        "git config merge.ours.driver 'sh tools/x.sh %A'",
        "git config remote.origin.uploadpack 'sh tools/x.sh'",
        "git config submodule.lib.update '!sh tools/x.sh'",
        "git config protocol.ext.allow always",
        "git config --rename-section user include",
        "git config set --append include.path tools/git.cfg",
    ];
    let mut calls: Vec<(&str, Value)> = writes.iter().map(|command| shell(command)).collect();
    calls.push(shell("git -c include.path=tools/git.cfg status"));
    calls.push((
        "write_file",
        json!({"path": ".git/config.worktree", "content": "[core]\n\tfsmonitor = sh tools/x.sh\n"}),
    ));
    calls.push(shell("git config user.name 'Ana Lima'"));
    let server = ScriptedServer::start(vec![tools(&calls), text("done")]).await;
    let mut cmd = l.odek(&server.base_url());
    cmd.args([
        "run",
        "--ephemeral",
        "--allow",
        "local_write",
        "configure git",
    ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), calls.len(), "{results:?}");
    let (refused, allowed) = results.split_at(calls.len() - 1);
    for (result, (_, call)) in refused.iter().zip(&calls) {
        let class = if call.to_string().contains("git -c") {
            "code_execution"
        } else {
            "persistence"
        };
        assert!(
            result.contains("operation denied") && result.contains(class),
            "{call}: {result}"
        );
    }
    assert!(!allowed[0].contains("denied"), "{}", allowed[0]);
    let config_after = read(work.join(".git/config"));
    assert!(!config_after.contains("include"), "{config_after}");
    assert!(!config_after.contains("tools/x.sh"), "{config_after}");
    assert!(config_after.contains("Ana Lima"), "{config_after}");
    assert!(
        config_after.starts_with(config_before.trim_end()),
        "{config_after}"
    );
    assert!(!work.join(".git/config.worktree").exists());
}

// ---------------------------------------------------------------------------------------
// Issue 60, H4: the key in another process's environment.

/// A `/proc` path the classifier cannot resolve (a `$(…)` pid, a computed name), one through
/// a magic link (`root`, `cwd`) or `/dev/fd`, one reached after `cd /proc/<pid>` or `cd /`,
/// and a link made to `/proc` are all secret reads: with nobody to ask, each is denied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proc_paths_the_classifier_cannot_follow_are_secret_reads() {
    let l = Layout::new();
    let commands = [
        "base32 -w0 /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/environ",
        "cat /proc/self/root/proc/1/environ",
        "base32 /proc/thread-self/root/proc/1/environ",
        "cat /dev/fd/../../1/environ",
        "cd /proc/1 && tr '\\0' '\\n' < environ",
        "cd /proc && cat 1/environ",
        "cd / && base32 proc/1/environ",
        "cat /proc/self/cwd/../../../../../../proc/1/environ",
        "cat /proc/$(echo 1/environ)",
        "ln -s /proc p",
    ];
    let calls: Vec<(&str, Value)> = commands.iter().map(|command| shell(command)).collect();
    let server = ScriptedServer::start(vec![tools(&calls), text("could not")]).await;
    let mut cmd = l.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "read the environment"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), commands.len(), "{results:?}");
    for (result, command) in results.iter().zip(commands) {
        assert!(
            result.contains("operation denied") && result.contains("secret_read"),
            "{command}: {result}"
        );
    }
    assert!(!l.sb.work.join("p").exists());
}
