//! The programs odek runs outside the sandbox — `git` for shell checkpoints, `sh` for hooks,
//! the shell tool and the jobs' watchdog — are resolved once at start, never from a `PATH`
//! entry the sandbox lets commands write: a model-written `.venv/bin/git` or `.venv/bin/sh`
//! in an activated virtual environment is never run.

use serde_json::json;

use crate::support::*;

/// Writes an executable `name` into `dir` that leaves a marker in `markers` when run.
fn fake_program(dir: &std::path::Path, name: &str, markers: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).expect("dir");
    let file = dir.join(name);
    let script = format!(
        "#!/bin/sh\necho ran >> '{}'\nexit 0\n",
        markers.join(name).display()
    );
    std::fs::write(&file, script).expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_and_sh_in_the_work_tree_on_path_are_never_run_by_odek() {
    let sb = Sandbox::new();
    let status = std::process::Command::new("git")
        .args(["init", "-q", "."])
        .current_dir(&sb.work)
        .status()
        .expect("git");
    assert!(status.success());
    let markers = sb.dir.path().join("markers");
    std::fs::create_dir_all(&markers).expect("markers");
    let venv = sb.work.join(".venv/bin");
    fake_program(&venv, "git", &markers);
    fake_program(&venv, "sh", &markers);
    sb.global_config(
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}})
            .to_string(),
    );
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "echo made > made.txt"}))]),
        text("Done."),
    ])
    .await;
    let path = format!(
        "{}:{}",
        venv.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("PATH", path).args(["run", "make a file"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let ran: Vec<String> = std::fs::read_dir(&markers)
        .expect("markers")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        ran.is_empty(),
        "odek ran the work tree's {ran:?}: {}",
        show(&out)
    );
    assert_eq!(read(sb.work.join("made.txt")), "made\n", "{}", show(&out));
    // The checkpoint was taken with the real git: the command's file is covered.
    let mut list = sb.odek(&server.base_url());
    list.env(
        "PATH",
        format!(
            "{}:{}",
            venv.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    )
    .args(["rewind", "--list"]);
    let listing = output(list).await;
    let listing = String::from_utf8_lossy(&listing.stdout).to_string();
    assert!(listing.contains("made.txt"), "{listing}");
}
