use super::*;

/// An odek home and a project root in one temporary folder.
struct Dirs {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Dirs {
    fn new() -> Dirs {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        let project = tmp.path().join("project");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&project).expect("project");
        Dirs {
            _tmp: tmp,
            home,
            project,
        }
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.project.join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
        path
    }

    fn write_home(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.home.join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
        path
    }

    fn places(&self, import_claude: bool) -> Places {
        Places {
            home: self.home.clone(),
            project: Some(self.project.clone()),
            import_claude,
        }
    }

    fn catalog(&self) -> Catalog {
        Catalog::discover(&self.places(true), None)
    }
}

fn names(catalog: &Catalog) -> Vec<(&str, &str)> {
    catalog
        .commands
        .iter()
        .map(|c| (c.name.as_str(), c.source.label()))
        .collect()
}

#[test]
fn folders_are_namespaces_and_every_source_is_found() {
    let d = Dirs::new();
    d.write(".odek/commands/review.md", "Review $ARGUMENTS\n");
    d.write(".odek/commands/frontend/build.md", "Build the UI\n");
    d.write(".claude/commands/git/commit.md", "Commit\n");
    d.write(".odek/commands/notes.txt", "not a command");
    d.write(".odek/commands/bad name.md", "x");
    d.write_home("commands/mine.md", "Mine\n");
    let catalog = d.catalog();
    assert_eq!(
        names(&catalog),
        vec![
            ("frontend:build", "project"),
            ("git:commit", "claude"),
            ("mine", "user"),
            ("review", "project"),
        ]
    );
    assert_eq!(catalog.broken.len(), 1, "{:?}", catalog.broken);
    assert!(catalog.warnings()[0].contains("bad name"));
    let without_claude = Catalog::discover(&d.places(false), None);
    assert!(without_claude.get("git:commit").is_none());
}

#[test]
fn project_wins_over_user_and_built_ins_win_over_both() {
    let d = Dirs::new();
    d.write(".odek/commands/review.md", "project review\n");
    d.write(".claude/commands/review.md", "claude review\n");
    d.write_home("commands/review.md", "my review\n");
    d.write(".odek/commands/undo.md", "not the built-in\n");
    let catalog = d.catalog();
    let review = catalog.get("review").expect("review");
    assert_eq!(review.source, Source::Project);
    assert_eq!(review.file.body, "project review");
    let hidden: Vec<(&str, &str)> = catalog
        .shadowed
        .iter()
        .map(|s| (s.command.name.as_str(), s.command.source.label()))
        .collect();
    assert_eq!(
        hidden,
        vec![
            ("undo", "project"),
            ("review", "claude"),
            ("review", "user")
        ]
    );
    assert_eq!(catalog.shadowed[0].by, "the built-in /undo");
    assert!(catalog.shadowed[1].by.contains("(project)"));
    assert!(catalog.get("undo").is_none());
    assert_eq!(catalog.expand("/undo").expect("built-in"), None);
    assert_eq!(catalog.warnings().len(), 3);
}

#[test]
fn the_front_matter_is_read_in_both_spellings_and_unknown_keys_are_ignored() {
    let text = "---\ndescription: Commit the work\nargument-hint: [message]\nmodel: small-model\nallowed-tools: Bash(git add:*), Bash(git commit:*), Read\ndisable-model-invocation: true\n---\n\nCommit: $ARGUMENTS\n";
    let f = file::parse(text.as_bytes()).expect("parse");
    assert_eq!(f.description, "Commit the work");
    assert_eq!(f.argument_hint.as_deref(), Some("[message]"));
    assert_eq!(f.model.as_deref(), Some("small-model"));
    assert_eq!(
        f.allowed_tools,
        Some(vec![
            "Bash(git add:*)".to_string(),
            "Bash(git commit:*)".into(),
            "Read".into()
        ])
    );
    assert_eq!(f.body, "Commit: $ARGUMENTS");
    let list =
        file::parse(b"---\nallowed-tools:\n  - read_file\n  - Grep\n---\n# Find things\nbody")
            .expect("list");
    assert_eq!(
        list.allowed_tools,
        Some(vec!["read_file".to_string(), "Grep".into()])
    );
    assert_eq!(list.description, "Find things", "the body's first line");
    let plain = file::parse(b"\n\nJust text $1\n").expect("plain");
    assert_eq!((plain.body.as_str(), plain.model), ("Just text $1", None));
    let hint =
        file::parse(b"---\nargument-hint: [pr] [priority]\nallowed-tools:\n  - Read\n---\nx")
            .expect("read as Claude Code reads it");
    assert_eq!(hint.argument_hint.as_deref(), Some("[pr] [priority]"));
    assert_eq!(hint.allowed_tools, Some(vec!["Read".to_string()]));
    assert!(file::parse(b"---\nmodel: [a\nx").is_err(), "never closed");
    assert!(file::parse(b"---\nallowed-tools: {a: b}\n---\nx").is_err());
}

#[test]
fn a_command_expands_its_arguments_and_maps_its_tools() {
    let d = Dirs::new();
    d.write_home(
        "commands/fix.md",
        "---\nallowed-tools: Read, Bash(git diff:*), NoSuchTool\n---\nFix issue #$1 in $2: $ARGUMENTS\n",
    );
    let catalog = d.catalog();
    let e = catalog
        .expand("/fix 42 src/a.rs   now")
        .expect("runs")
        .expect("a command");
    assert_eq!(e.prompt, "Fix issue #42 in src/a.rs: 42 src/a.rs   now");
    let tools = e.tools.expect("narrowed");
    for tool in ["read_file", "batch_read", "shell", "background"] {
        assert!(tools.contains(&tool.to_string()), "{tool}: {tools:?}");
    }
    assert_eq!(e.warnings.len(), 2, "{:?}", e.warnings);
    assert!(e.warnings.iter().any(|w| w.contains("NoSuchTool")));
    let short = catalog.expand("/fix").expect("runs").expect("a command");
    assert_eq!(short.prompt, "Fix issue # in : ");
    assert_eq!(catalog.expand("plain text").expect("text"), None);
    assert_eq!(catalog.expand("/tmp/x is full").expect("a path"), None);
    let unknown = catalog.expand("/nope x").expect_err("unknown");
    assert_eq!(unknown.to_string(), "no command /nope");
}

#[test]
fn a_narrowing_project_command_runs_only_while_its_bytes_are_trusted() {
    let d = Dirs::new();
    let text = "---\nmodel: big-model\n---\nDo $ARGUMENTS\n";
    let path = d.write(".odek/commands/deploy.md", text);
    d.write(".odek/commands/plain.md", "Only text\n");
    let catalog = d.catalog();
    assert!(catalog.expand("/plain").expect("no trust needed").is_some());
    let refused = catalog.expand("/deploy now").expect_err("not trusted");
    let message = refused.to_string();
    assert!(
        message.contains("sets model and is not trusted"),
        "{message}"
    );
    assert!(message.contains("odek commands trust deploy"), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(!catalog.get("deploy").expect("listed").view().runnable);

    catalog.trust(&d.home, "/deploy").expect("trust");
    let trusted = d.catalog();
    let e = trusted
        .expand("/deploy now")
        .expect("trusted")
        .expect("command");
    assert_eq!(
        (e.prompt.as_str(), e.model.as_deref()),
        ("Do now", Some("big-model"))
    );

    std::fs::write(&path, text.replace("big-model", "other-model")).expect("edit");
    let changed = d.catalog().expand("/deploy").expect_err("changed");
    assert!(
        changed.to_string().contains("changed since you trusted it"),
        "{changed}"
    );
    assert!(d.catalog().untrust(&d.home, "deploy").expect("untrust"));
    assert!(!d.catalog().untrust(&d.home, "deploy").expect("again"));
    d.write_home("commands/mine.md", "---\nmodel: m\n---\nx");
    let mine = d.catalog();
    assert!(mine.expand("/mine").expect("a user's runs").is_some());
    assert!(matches!(
        mine.trust(&d.home, "mine"),
        Err(CommandError::AlwaysTrusted { .. })
    ));
}

#[test]
fn a_skill_is_a_command_with_its_body_and_the_task() {
    let d = Dirs::new();
    d.write_home(
        "skills/release-notes/SKILL.md",
        "---\nname: release-notes\ndescription: Write release notes\n---\nRead the log, then write notes.\n",
    );
    d.write_home("commands/own.md", "own\n");
    let skills_places = crate::skills::Places {
        home: d.home.join("skills"),
        project: None,
        configured: Vec::new(),
    };
    let skills = Arc::new(crate::skills::Catalog::discover(&skills_places, &d.home));
    let catalog = Catalog::discover(&d.places(true), Some(skills));
    assert_eq!(
        names(&catalog),
        vec![("own", "user"), ("release-notes", "skill")]
    );
    let e = catalog
        .expand("/release-notes for 1.2")
        .expect("runs")
        .expect("command");
    assert!(
        e.prompt.contains("Read the log, then write notes."),
        "{}",
        e.prompt
    );
    assert!(
        e.prompt
            .ends_with("Use the skill \"release-notes\" for this task: for 1.2")
    );
    assert_eq!((e.model, e.tools), (None, None));
}
