use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use super::*;

fn checkpoints(home: &Path, turn: u32) -> Arc<Checkpoints> {
    Arc::new(Checkpoints::new(&root(home), "s1", turn, 1024 * 1024))
}

/// Writes `content` to `path` the way a file tool does: checkpoint first.
fn tool_write(cp: &Arc<Checkpoints>, tool: &str, files: &[(&Path, &str)]) {
    let call = cp.begin(tool);
    for (path, content) in files {
        call.capture(path, content.as_bytes()).expect("capture");
        fs::write(path, content).expect("write");
    }
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).expect("meta").permissions().mode() & 0o7777
}

#[test]
fn a_rewind_puts_contents_and_modes_back_and_removes_new_files() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let (a, b, c) = (
        work.path().join("a.txt"),
        work.path().join("b.sh"),
        work.path().join("new.txt"),
    );
    fs::write(&a, "one\n").expect("a");
    fs::write(&b, "#!/bin/sh\n").expect("b");
    fs::set_permissions(&b, fs::Permissions::from_mode(0o750)).expect("mode");
    let cp = checkpoints(home.path(), 1);
    tool_write(&cp, "patch", &[(&a, "two\n")]);
    tool_write(
        &cp,
        "batch_patch",
        &[(&b, "#!/bin/sh\necho\n"), (&a, "three\n")],
    );
    let cp = checkpoints(home.path(), 2);
    tool_write(&cp, "write_file", &[(&c, "fresh")]);

    let history = cp.history().expect("history");
    let listed: Vec<(u32, u32, &str, usize)> = history
        .checkpoints
        .iter()
        .map(|c| (c.n, c.turn, c.tool.as_str(), c.files.len()))
        .collect();
    assert_eq!(
        listed,
        vec![
            (1, 1, "patch", 1),
            (2, 1, "batch_patch", 2),
            (3, 2, "write_file", 1)
        ]
    );
    assert_eq!(history.checkpoints[2].files[0].kind(), "added");
    // Times as sessions write them: `2026-12-04T05:50:01.123Z`.
    let at = &history.checkpoints[0].at;
    assert!(
        at.len() == 24 && at.ends_with('Z') && &at[19..20] == ".",
        "{at}"
    );

    let plan = plan_rewind(&history, 2).expect("plan");
    assert!(plan.conflicts.is_empty());
    let actions: Vec<&str> = plan.restores.iter().map(|r| r.action()).collect();
    assert_eq!(actions, ["restore", "restore", "remove"]);
    cp.rewind(&plan, false).expect("rewind");
    assert_eq!(fs::read_to_string(&a).unwrap(), "two\n");
    assert_eq!(fs::read_to_string(&b).unwrap(), "#!/bin/sh\n");
    assert_eq!(mode(&b), 0o750);
    assert!(!c.exists());

    let plan = plan_rewind(&cp.history().unwrap(), 1).expect("plan");
    cp.rewind(&plan, false).expect("rewind to 1");
    assert_eq!(fs::read_to_string(&a).unwrap(), "one\n");

    // The store: blobs 0600 in 0700 folders, the same content kept once.
    let blobs = root(home.path()).join("blobs");
    let mut count = 0;
    for dir in fs::read_dir(&blobs).unwrap() {
        let dir = dir.unwrap().path();
        assert_eq!(mode(&dir), 0o700);
        for blob in fs::read_dir(&dir).unwrap() {
            assert_eq!(mode(&blob.unwrap().path()), 0o600);
            count += 1;
        }
    }
    // The tools' pre-images (one, #!/bin/sh, two), then the first rewind's (three, the
    // edited script, fresh); the second rewind's (two) is already there: 6 contents.
    assert_eq!(count, 6);
}

#[test]
fn a_file_changed_outside_stops_the_rewind_until_forced() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let a = work.path().join("a.txt");
    fs::write(&a, "mine\n").expect("a");
    let cp = checkpoints(home.path(), 1);
    tool_write(&cp, "write_file", &[(&a, "odek's\n")]);
    fs::write(&a, "edited by hand\n").expect("edit");
    let plan = plan_rewind(&cp.history().unwrap(), 1).expect("plan");
    assert_eq!(plan.conflicts.len(), 1);
    let e = cp.rewind(&plan, false).expect_err("conflict");
    assert!(
        e.to_string()
            .contains("1 file(s) changed since odek wrote them"),
        "{e}"
    );
    assert!(e.to_string().contains("a.txt"), "{e}");
    assert_eq!(fs::read_to_string(&a).unwrap(), "edited by hand\n");
    assert_eq!(
        cp.history().unwrap().checkpoints.len(),
        1,
        "nothing recorded"
    );
    cp.rewind(&plan, true).expect("forced");
    assert_eq!(fs::read_to_string(&a).unwrap(), "mine\n");
}

#[test]
fn a_rewind_is_a_checkpoint_that_can_be_rewound() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let a = work.path().join("a.txt");
    let cp = checkpoints(home.path(), 1);
    tool_write(&cp, "write_file", &[(&a, "v1")]);
    tool_write(&cp, "patch", &[(&a, "v2")]);
    let done = cp
        .rewind(&plan_rewind(&cp.history().unwrap(), 1).unwrap(), false)
        .expect("rewind");
    assert!(!a.exists(), "a file that did not exist is removed");
    assert_eq!(done.checkpoint, 3);
    let undo = plan_rewind(&cp.history().unwrap(), 3).expect("plan");
    cp.rewind(&undo, false).expect("undo the rewind");
    assert_eq!(fs::read_to_string(&a).unwrap(), "v2");
}

#[test]
fn an_interrupted_rewind_is_finished_by_running_it_again() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    fs::write(&a, "a0").unwrap();
    fs::write(&b, "b0").unwrap();
    let cp = checkpoints(home.path(), 1);
    tool_write(&cp, "batch_patch", &[(&a, "a1"), (&b, "b1")]);
    let plan = plan_rewind(&cp.history().unwrap(), 1).unwrap();
    // As if killed after the rewind's record and its first file.
    let id = cp.record_rewind_for_test(&plan);
    fs::write(&a, "a0").unwrap();
    let history = cp.history().unwrap();
    assert_eq!(history.interrupted_rewind().map(|c| c.n), Some(2));
    let e = plan_rewind(&history, 2).expect_err("another target");
    assert!(e.to_string().contains("odek rewind --to 1"), "{e}");
    let again = plan_rewind(&history, 1).expect("the same target");
    assert_eq!(again.resuming, Some(id));
    assert!(again.conflicts.is_empty(), "{:?}", again.conflicts);
    cp.rewind(&again, false).expect("finish");
    assert_eq!(fs::read_to_string(&b).unwrap(), "b0");
    let history = cp.history().unwrap();
    assert!(history.interrupted_rewind().is_none());
    assert_eq!(history.checkpoints.len(), 2, "no second rewind record");
}

#[test]
fn a_torn_last_line_is_skipped_and_an_oversized_file_is_not_covered() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let big = work.path().join("big.bin");
    fs::write(&big, vec![b'x'; 2048]).unwrap();
    let cp = Arc::new(Checkpoints::new(&root(home.path()), "s1", 1, 1024));
    tool_write(&cp, "write_file", &[(&big, "small now")]);
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(cp.record_file())
        .unwrap();
    std::io::Write::write_all(&mut file, b"{\"id\": \"ab\", \"tu").unwrap();
    let history = cp.history().unwrap();
    assert_eq!(history.checkpoints.len(), 1);
    assert!(history.checkpoints[0].files.is_empty());
    assert!(history.checkpoints[0].not_covered[0].contains("2048 bytes"));
    let plan = plan_rewind(&history, 1).unwrap();
    assert!(plan.restores.is_empty());
    assert_eq!(plan.not_covered.len(), 1);
}

/// A turn and its sub-agents write one record file from several processes: lines of calls
/// running at once interleave, and each call is still one checkpoint, numbered in the order
/// it started.
#[test]
fn interleaved_calls_of_several_writers_stay_one_checkpoint_each() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let parent = checkpoints(home.path(), 3);
    let child = checkpoints(home.path(), 3);
    let files: Vec<_> = (0..4).map(|i| work.path().join(format!("f{i}"))).collect();
    let first = parent.begin("batch_patch");
    let second = child.begin("write_file");
    first.capture(&files[0], b"p0").expect("p0");
    second.capture(&files[1], b"c1").expect("c1");
    first.capture(&files[2], b"p2").expect("p2");
    second.capture(&files[3], b"c3").expect("c3");
    let history = parent.history().expect("history");
    let shape: Vec<(u32, &str, usize)> = history
        .checkpoints
        .iter()
        .map(|c| (c.n, c.tool.as_str(), c.files.len()))
        .collect();
    assert_eq!(shape, vec![(1, "batch_patch", 2), (2, "write_file", 2)]);
}

#[test]
fn forgetting_a_session_removes_its_records_and_the_blobs_only_it_held() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    fs::write(&a, "shared").unwrap();
    fs::write(&b, "only s2").unwrap();
    let s1 = Arc::new(Checkpoints::new(&root(home.path()), "s1", 1, u64::MAX));
    let s2 = Arc::new(Checkpoints::new(&root(home.path()), "s2", 1, u64::MAX));
    s1.begin("patch").capture(&a, b"x").unwrap();
    s2.begin("patch").capture(&a, b"y").unwrap();
    s2.begin("patch").capture(&b, b"z").unwrap();
    let removed = forget_sessions(&root(home.path()), &["s2".to_string()]).unwrap();
    assert_eq!(
        removed, 1,
        "the blob of \"only s2\"; \"shared\" is s1's too"
    );
    assert!(!s2.record_file().exists());
    fs::write(&a, "x").unwrap();
    let plan = plan_rewind(&s1.history().unwrap(), 1).unwrap();
    s1.rewind(&plan, false).unwrap();
    assert_eq!(fs::read_to_string(&a).unwrap(), "shared");
}

fn sh(dir: &Path, script: &str) {
    let status = std::process::Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .status()
        .expect("sh");
    assert!(status.success(), "{script}");
}

/// Every file under `dir` but `.git`: path, bytes, mode.
fn tree_of(dir: &Path) -> Vec<(String, Vec<u8>, u32)> {
    let mut out = Vec::new();
    for entry in ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .flatten()
    {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            let path = entry.path();
            out.push((
                path.strip_prefix(dir).unwrap().display().to_string(),
                fs::read(path).unwrap(),
                mode(path),
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn a_shell_command_in_a_git_tree_is_rewound_byte_exact() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let w = work.path();
    sh(
        w,
        "git init -q . && printf 'a\\r\\nb\\n' > crlf.txt && echo 'x' > gone.txt && \
         echo '#!/bin/sh' > run.sh && chmod 750 run.sh && mkdir -p sub && echo old > sub/f.txt && \
         echo 'ignored.log' > .gitignore && echo keep > ignored.log && \
         echo '* text=auto eol=crlf' > .gitattributes && echo untracked > notes.txt && \
         git add crlf.txt gone.txt run.sh sub .gitignore .gitattributes",
    );
    let before = tree_of(w);
    let user_index = fs::read(w.join(".git/index")).expect("index");
    let cp = checkpoints(home.path(), 1);
    let call = cp.before_shell(&w.join("sub"));
    sh(
        w,
        "sed 's/old/new/' sub/f.txt > sub/f.new && mv sub/f.new sub/f.txt && rm gone.txt && \
         chmod 700 run.sh && printf 'n\\n' > new.txt && printf 'z\\n' > crlf.txt && echo more >> notes.txt && echo x > ignored.log",
    );
    call.finish().expect("finish");
    assert_eq!(
        fs::read(w.join(".git/index")).unwrap(),
        user_index,
        "the user's index"
    );
    let history = cp.history().unwrap();
    assert_eq!(history.checkpoints.len(), 1);
    let c = &history.checkpoints[0];
    assert_eq!(c.tool, "shell");
    let mut kinds: Vec<_> = c
        .files
        .iter()
        .map(|f| format!("{} {}", f.kind(), f.path.strip_prefix(w).unwrap().display()))
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "added new.txt",
            "changed crlf.txt",
            "changed notes.txt",
            "changed run.sh",
            "changed sub/f.txt",
            "deleted gone.txt",
        ]
    );
    let plan = plan_rewind(&history, 1).expect("plan");
    assert!(plan.conflicts.is_empty(), "{:?}", plan.conflicts);
    cp.rewind(&plan, false).expect("rewind");
    let mut after = tree_of(w);
    // The ignored file is not covered: it keeps the command's change.
    for entry in after.iter_mut().filter(|e| e.0 == "ignored.log") {
        entry.1 = b"keep\n".to_vec();
    }
    assert_eq!(after, before);
}

#[test]
fn a_shell_command_outside_a_git_tree_or_over_the_limit_is_not_covered() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let cp = checkpoints(home.path(), 1);
    cp.before_shell(work.path()).finish().expect("finish");
    sh(
        work.path(),
        "git init -q . && for i in 1 2 3; do echo $i > f$i; done",
    );
    let small = Arc::new(Checkpoints::new(&root(home.path()), "s1", 2, 1024).with_max_files(2));
    small.before_shell(work.path()).finish().expect("finish");
    let history = cp.history().unwrap();
    assert_eq!(history.checkpoints.len(), 2);
    assert!(history.checkpoints[0].not_covered[0].contains("not inside a git work tree"));
    assert!(history.checkpoints[1].not_covered[0].contains("3 files, over checkpoints.max_files"));
    // Nothing changed in a covered tree: no checkpoint.
    cp.before_shell(work.path()).finish().expect("finish");
    assert_eq!(cp.history().unwrap().checkpoints.len(), 2);
}

/// Makes `path` look last written `secs` ago.
fn age(path: &Path, secs: u64) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
    fs::File::options()
        .write(true)
        .open(path)
        .expect("open")
        .set_modified(when)
        .expect("mtime");
}

fn days_ago(days: i64) -> String {
    jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_hours(24 * days))
        .unwrap()
        .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[test]
fn retention_drops_old_checkpoints_then_the_oldest_over_the_size_and_leaves_busy_records() {
    let home = tempfile::tempdir().expect("home");
    let root = root(home.path());
    let blobs = BlobStore::new(&root);
    let record = |session: &str, id: &str, at: String, content: &[u8]| {
        let cp = Checkpoints::new(&root, session, 1, u64::MAX);
        let hash = blobs.put(content).unwrap();
        let (_, file) = blobs.place_of(&hash).unwrap();
        age(&file, 7200);
        cp.append(&RecordLine::Checkpoint(Checkpoint {
            n: 0,
            id: id.into(),
            turn: 1,
            at,
            tool: "patch".into(),
            files: vec![FileChange {
                path: "/w/a.txt".into(),
                before: Some(Image {
                    hash: hash.clone(),
                    mode: 0o644,
                }),
                after: None,
            }],
            not_covered: Vec::new(),
            rewound_to: None,
        }))
        .unwrap();
        hash
    };
    let old = record("s1", "old", days_ago(40), &[b'a'; 100]);
    let middle = record("s1", "middle", days_ago(2), &[b'b'; 100]);
    let newest = record("s1", "newest", days_ago(1), &[b'c'; 100]);
    let busy = record("s2", "busy", days_ago(60), &[b'd'; 100]);
    age(&store::record_file(&root, "s1"), 7200);
    let exists = |hash: &str| blobs.get(hash).is_ok();

    let limits = Retention {
        keep_days: 30,
        max_bytes: 10_000,
    };
    let pruned = prune(&root, limits).unwrap();
    assert_eq!(
        pruned,
        Pruned {
            checkpoints: 1,
            blobs: 1
        }
    );
    assert!(!exists(&old) && exists(&middle) && exists(&newest));
    assert!(
        exists(&busy),
        "a record written within the hour is left alone"
    );

    age(&store::record_file(&root, "s1"), 7200);
    let pruned = prune(
        &root,
        Retention {
            keep_days: 30,
            max_bytes: 250,
        },
    )
    .unwrap();
    assert_eq!(
        pruned,
        Pruned {
            checkpoints: 1,
            blobs: 1
        },
        "the oldest first"
    );
    assert!(!exists(&middle) && exists(&newest));
    let left = Checkpoints::new(&root, "s1", 1, u64::MAX)
        .history()
        .unwrap();
    assert_eq!(
        left.checkpoints
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        ["newest"]
    );
}

/// Issue 60, H1: a folder of the tree swapped for a link to a folder outside it. Neither the
/// plan nor the rewind goes through the link: nothing outside is written or removed, and the
/// files under it are not covered.
#[test]
fn a_rewind_never_goes_through_a_link_that_replaced_a_folder() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let outside = tempfile::tempdir().expect("outside");
    fs::write(outside.path().join("notes.txt"), "mine").unwrap();
    let sub = work.path().join("sub");
    fs::create_dir(&sub).unwrap();
    let (notes, aliases) = (sub.join("notes.txt"), sub.join(".bash_aliases"));
    let cp = checkpoints(home.path(), 1);
    tool_write(&cp, "write_file", &[(&notes, "mine")]);
    tool_write(&cp, "write_file", &[(&aliases, "alias x=y")]);
    fs::remove_file(&aliases).unwrap();
    fs::rename(&sub, work.path().join("old")).unwrap();
    std::os::unix::fs::symlink(outside.path(), &sub).unwrap();

    let plan = plan_rewind(&cp.history().unwrap(), 1).expect("plan");
    assert!(plan.restores.is_empty(), "{:?}", plan.restores);
    assert!(plan.conflicts.is_empty(), "{:?}", plan.conflicts);
    assert_eq!(plan.not_covered.len(), 2, "{:?}", plan.not_covered);
    for (line, file) in plan.not_covered.iter().zip([&notes, &aliases]) {
        assert!(
            line.starts_with(&format!(
                "{}: {} is a symbolic link now",
                file.display(),
                sub.display()
            )),
            "{line}"
        );
    }
    assert_eq!(
        fs::read_to_string(outside.path().join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(!outside.path().join(".bash_aliases").exists());
}

/// The link is made after the plan (a background job, say): the rewind walks again as it
/// writes, and leaves the file as it is instead of writing or removing through the link.
#[test]
fn a_link_made_between_the_plan_and_the_rewind_stops_at_the_rewind() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let outside = tempfile::tempdir().expect("outside");
    let sub = work.path().join("sub");
    fs::create_dir(&sub).unwrap();
    let (kept, added) = (sub.join("kept.txt"), sub.join("added.txt"));
    fs::write(&kept, "v0").unwrap();
    let cp = checkpoints(home.path(), 1);
    tool_write(&cp, "batch_patch", &[(&kept, "v1"), (&added, "new")]);
    let plan = plan_rewind(&cp.history().unwrap(), 1).expect("plan");
    assert_eq!(plan.restores.len(), 2);

    fs::rename(&sub, work.path().join("old")).unwrap();
    std::os::unix::fs::symlink(outside.path(), &sub).unwrap();
    fs::write(outside.path().join("added.txt"), "new").unwrap();
    let done = cp.rewind(&plan, false).expect("rewind");
    assert!(done.restored.is_empty(), "{:?}", done.restored);
    assert_eq!(done.not_covered.len(), 2, "{:?}", done.not_covered);
    assert!(
        !outside.path().join("kept.txt").exists(),
        "nothing created outside"
    );
    assert_eq!(
        fs::read_to_string(outside.path().join("added.txt")).unwrap(),
        "new",
        "nothing removed outside"
    );
}

/// A file that is itself a link, a folder or a FIFO now is not covered: never read (a FIFO
/// would block), never written through.
#[test]
fn a_file_that_is_a_link_a_folder_or_a_fifo_now_is_not_covered() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let outside = tempfile::tempdir().expect("outside");
    let target = outside.path().join("secret");
    fs::write(&target, "s").unwrap();
    let (link, folder, fifo) = (
        work.path().join("link"),
        work.path().join("folder"),
        work.path().join("fifo"),
    );
    let cp = checkpoints(home.path(), 1);
    tool_write(
        &cp,
        "batch_patch",
        &[(&link, "a"), (&folder, "b"), (&fifo, "c")],
    );
    for path in [&link, &folder, &fifo] {
        fs::remove_file(path).unwrap();
    }
    std::os::unix::fs::symlink(&target, &link).unwrap();
    fs::create_dir(&folder).unwrap();
    sh(work.path(), "mkfifo fifo");
    let plan = plan_rewind(&cp.history().unwrap(), 1).expect("plan");
    assert!(plan.restores.is_empty(), "{:?}", plan.restores);
    let said: Vec<&str> = plan
        .not_covered
        .iter()
        .map(|l| l.split(": ").nth(1).unwrap_or_default())
        .collect();
    assert_eq!(
        said,
        [
            "a symbolic link now (a rewind never goes through a link or a non-folder)",
            "a folder now (a rewind never goes through a link or a non-folder)",
            "not a regular file now (a rewind never goes through a link or a non-folder)"
        ]
    );
    assert_eq!(fs::read_to_string(&target).unwrap(), "s");
}

/// A rewind still makes the folders a file needs, inside the tree, and leaves no temp file.
#[test]
fn a_rewind_makes_the_folders_it_needs_inside_the_tree() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let deep = work.path().join("a/b/c.txt");
    fs::create_dir_all(deep.parent().unwrap()).unwrap();
    fs::write(&deep, "c0").unwrap();
    fs::set_permissions(&deep, fs::Permissions::from_mode(0o640)).unwrap();
    let cp = checkpoints(home.path(), 1);
    tool_write(&cp, "patch", &[(&deep, "c1")]);
    fs::remove_dir_all(work.path().join("a")).unwrap();
    let plan = plan_rewind(&cp.history().unwrap(), 1).expect("plan");
    assert_eq!(plan.restores.len(), 1);
    assert!(plan.not_covered.is_empty(), "{:?}", plan.not_covered);
    cp.rewind(&plan, true)
        .expect("rewind (the folder removed since is a conflict)");
    assert_eq!(fs::read_to_string(&deep).unwrap(), "c0");
    assert_eq!(mode(&deep), 0o640);
    assert_eq!(
        fs::read_dir(deep.parent().unwrap()).unwrap().count(),
        1,
        "no temp file left"
    );
}

/// A shell command that turns a folder into a link (`mv sub old && ln -s $HOME sub`): its
/// checkpoint records the folder's files as gone from the tree, never what the link leads to;
/// the rewind leaves them while the link stays, and puts them back once it is gone.
#[test]
fn a_shell_command_that_links_a_folder_out_records_its_files_as_gone() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let outside = tempfile::tempdir().expect("outside");
    let w = work.path();
    fs::write(outside.path().join("f.txt"), "outside\n").unwrap();
    sh(w, "git init -q . && mkdir sub && echo inside > sub/f.txt");
    let cp = checkpoints(home.path(), 1);
    let call = cp.before_shell(w);
    sh(
        w,
        &format!("mv sub old && ln -s {} sub", outside.path().display()),
    );
    call.finish().expect("finish");
    let history = cp.history().unwrap();
    let c = &history.checkpoints[0];
    let f = c
        .files
        .iter()
        .find(|f| f.path == w.join("sub/f.txt"))
        .expect("sub/f.txt recorded");
    assert_eq!(
        f.after, None,
        "gone from the tree, whatever the link leads to"
    );
    assert!(
        c.not_covered.iter().any(|l| l.starts_with(&format!(
            "{}: not a regular file now",
            w.join("sub").display()
        ))),
        "{:?}",
        c.not_covered
    );
    let plan = plan_rewind(&history, 1).expect("plan");
    assert!(
        plan.not_covered
            .iter()
            .any(|l| l.contains("sub/f.txt") && l.contains("is a symbolic link now")),
        "{:?}",
        plan.not_covered
    );
    cp.rewind(&plan, false).expect("rewind");
    assert_eq!(
        fs::read_to_string(outside.path().join("f.txt")).unwrap(),
        "outside\n"
    );
    assert!(!w.join("old/f.txt").exists(), "the rest is rewound");

    fs::remove_file(w.join("sub")).unwrap();
    let plan = plan_rewind(&cp.history().unwrap(), 1).expect("plan");
    cp.rewind(&plan, false).expect("rewind");
    assert_eq!(fs::read_to_string(w.join("sub/f.txt")).unwrap(), "inside\n");
}

/// A working directory given through a link (an editor's path to a linked project): the shell
/// checkpoint records the tree's real paths, so a rewind, which never follows a link, covers
/// them.
#[test]
fn a_shell_checkpoint_through_a_linked_working_directory_records_real_paths() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let links = tempfile::tempdir().expect("links");
    let real = work.path().canonicalize().unwrap();
    sh(&real, "git init -q . && echo one > a.txt");
    let linked = links.path().join("project");
    std::os::unix::fs::symlink(&real, &linked).unwrap();
    let cp = checkpoints(home.path(), 1);
    let call = cp.before_shell(&linked);
    sh(&linked, "echo two > a.txt");
    call.finish().expect("finish");
    let history = cp.history().unwrap();
    let paths: Vec<&Path> = history.checkpoints[0]
        .files
        .iter()
        .map(|f| f.path.as_path())
        .collect();
    assert_eq!(paths, [real.join("a.txt").as_path()]);
    let plan = plan_rewind(&history, 1).expect("plan");
    assert!(plan.not_covered.is_empty(), "{:?}", plan.not_covered);
    cp.rewind(&plan, false).expect("rewind");
    assert_eq!(fs::read_to_string(real.join("a.txt")).unwrap(), "one\n");
}

/// A file the interrupted rewind could not reach (under a link then) has no copy in its
/// record: finishing it leaves that file as it is, even once it can be reached.
#[test]
fn finishing_a_rewind_leaves_what_it_could_not_record() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let outside = tempfile::tempdir().expect("outside");
    let sub = work.path().join("sub");
    fs::create_dir(&sub).unwrap();
    let (a, b) = (sub.join("a.txt"), work.path().join("b.txt"));
    fs::write(&a, "a0").unwrap();
    fs::write(&b, "b0").unwrap();
    let cp = checkpoints(home.path(), 1);
    tool_write(&cp, "batch_patch", &[(&a, "a1"), (&b, "b1")]);
    let plan = plan_rewind(&cp.history().unwrap(), 1).unwrap();
    fs::rename(&sub, work.path().join("old")).unwrap();
    std::os::unix::fs::symlink(outside.path(), &sub).unwrap();
    cp.record_rewind_for_test(&plan); // killed at once, sub/a.txt unreachable then
    fs::remove_file(&sub).unwrap();
    fs::rename(work.path().join("old"), &sub).unwrap();

    let again = plan_rewind(&cp.history().unwrap(), 1).unwrap();
    assert!(again.resuming.is_some());
    assert!(
        again.not_covered[0].contains("not recorded by the interrupted rewind"),
        "{:?}",
        again.not_covered
    );
    cp.rewind(&again, false).expect("finish");
    assert_eq!(fs::read_to_string(&b).unwrap(), "b0");
    assert_eq!(fs::read_to_string(&a).unwrap(), "a1", "left as it is");
}
