//! `odek completions <shell>` and `odek man` through the binary.

use crate::support::*;

async fn stdout_of(args: &[&str]) -> String {
    let sb = Sandbox::new();
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(args);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_scripts_for_every_shell_name_the_commands_and_flags() {
    let bash = stdout_of(&["completions", "bash"]).await;
    assert!(bash.contains("_odek()"), "{bash}");
    for word in [
        "serve",
        "telegram",
        "continue",
        "--no-planning",
        "--events-jsonl",
    ] {
        assert!(bash.contains(word), "bash lacks {word}");
    }
    // The script works in bash: `odek tel<TAB>` completes to telegram.
    let script = std::env::temp_dir().join(format!("odek-completion-{}.bash", std::process::id()));
    std::fs::write(&script, &bash).expect("write");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(odek tel); COMP_CWORD=1; _odek odek tel odek; echo \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .expect("bash runs");
    let _ = std::fs::remove_file(&script);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "telegram",
        "{}",
        show(&out)
    );

    let zsh = stdout_of(&["completions", "zsh"]).await;
    assert!(zsh.starts_with("#compdef odek"), "{zsh}");
    assert!(
        zsh.contains("'--max-iter=[Iterations per run"),
        "flag help is in zsh"
    );
    let fish = stdout_of(&["completions", "fish"]).await;
    assert!(fish.contains("complete -c odek"), "{fish}");
    assert!(fish.contains("telegram"), "{fish}");
    let ps = stdout_of(&["completions", "powershell"]).await;
    assert!(ps.contains("Register-ArgumentCompleter"), "{ps}");

    let sb = Sandbox::new();
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["completions", "tcsh"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        show(&out).contains("possible values: bash, zsh, fish, powershell"),
        "{}",
        show(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manual_page_is_roff_with_every_command() {
    let man = stdout_of(&["man"]).await;
    assert!(
        man.starts_with(".ie \\n(.g .ds Aq"),
        "{}",
        &man[..200.min(man.len())]
    );
    assert!(man.contains(".TH odek 1"), "{man}");
    for command in [
        "run",
        "repl",
        "continue",
        "session",
        "serve",
        "telegram",
        "completions",
    ] {
        assert!(man.contains(&format!("odek\\-{command}(1)")), "{command}");
    }

    // --dir writes the page of every command those lines point to.
    let sb = Sandbox::new();
    let dir = sb.tmp().join("man1");
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.arg("man").arg("--dir").arg(&dir);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for page in [
        "odek.1",
        "odek-run.1",
        "odek-serve.1",
        "odek-telegram.1",
        "odek-session-list.1",
    ] {
        let text = read(dir.join(page));
        assert!(text.contains(".TH odek"), "{page}");
    }
    assert!(read(dir.join("odek-serve.1")).contains("\\-\\-addr"));
}
