use super::*;

/// A file as Claude Code's `/agents` writes it.
const CLAUDE_AGENT: &str = "---\n\
name: code-reviewer\n\
description: Expert code review specialist. Use proactively after writing code.\n\
tools: Read, Grep, Glob, Bash\n\
model: sonnet\n\
color: blue\n\
---\n\
\n\
You are a senior code reviewer ensuring high standards of code quality.\n";

fn write(dir: &Path, relative: &str, text: &str) -> PathBuf {
    let path = dir.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn agent(name: &str, extra: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: does {name} things\n{extra}---\n{body}\n")
}

#[test]
fn a_claude_code_file_reads_unchanged() {
    let file = file::parse(CLAUDE_AGENT, "code-reviewer").unwrap();
    assert_eq!(file.name, "code-reviewer");
    assert_eq!(
        file.tools.as_deref().unwrap(),
        [
            "read_file",
            "batch_read",
            "search_files",
            "glob",
            "shell",
            "background"
        ]
    );
    assert_eq!(file.model.as_deref(), Some("sonnet"));
    assert_eq!(file.other_keys, ["color"]);
    assert!(file.prompt.starts_with("You are a senior code reviewer"));
    assert!(file.notes.is_empty());
}

#[test]
fn odeks_keys_and_both_shapes_of_tools_are_read() {
    let text = agent(
        "fixer",
        "tools: [read_file, Edit, NotebookEdit]\nprovider: openai\nmax_iter: 12\ntrust_level: trusted\n",
        "Fix it.",
    );
    let file = file::parse(&text, "other-stem").unwrap();
    assert_eq!(
        file.tools.as_deref().unwrap(),
        ["read_file", "patch", "batch_patch"]
    );
    assert!(file.notes[0].contains("NotebookEdit"), "{:?}", file.notes);
    assert_eq!(file.provider.as_deref(), Some("openai"));
    assert_eq!(file.max_iter, Some(12));
    assert_eq!(file.trust_level, Some(Trust::Trusted));
    let no_name = "---\ndescription: d\n---\nbody\n";
    assert_eq!(file::parse(no_name, "from-stem").unwrap().name, "from-stem");
    assert_eq!(
        file::parse(no_name, "x").unwrap().tools,
        None,
        "no tools: all"
    );
}

#[test]
fn a_broken_file_names_the_rule() {
    let rule = |text: &str| file::parse(text, "x").unwrap_err().to_string();
    assert!(rule("no front matter").contains("must start with a YAML front matter"));
    assert!(rule("---\nname: x\n---\nbody").contains("`description` is required"));
    assert!(rule(&agent("x", "", "")).contains("must not be empty"));
    assert!(rule(&agent("Bad Name", "", "b")).contains("lowercase letters"));
    assert!(rule(&agent("x", "tools: 3\n", "b")).contains("`tools` must be"));
    assert!(rule(&agent("x", "max_iter: 0\n", "b")).contains("`max_iter`"));
    assert!(rule(&agent("x", "trust_level: root\n", "b")).contains("`trust_level`"));
    assert!(rule("---\nname: x\ndescription: d\n").contains("no closing `---`"));
}

#[test]
fn a_claude_code_description_that_is_not_yaml_is_read_line_by_line() {
    let text = "---\nname: fixer\ndescription: Use it when tests fail. Examples:\n\
<example>\nContext: red tests\nuser: \"fix it\"\n</example>\ntools: Read, Edit\n\
model: inherit\n---\nFix the tests.\n";
    let file = file::parse(text, "fixer").unwrap();
    assert!(
        file.description.contains("user: \"fix it\""),
        "{}",
        file.description
    );
    assert_eq!(
        file.tools.as_deref().unwrap(),
        ["read_file", "batch_read", "patch", "batch_patch"]
    );
    assert_eq!(file.model.as_deref(), Some("inherit"));
    assert_eq!(file.notes, [file::LENIENT_NOTE]);
}

#[test]
fn model_aliases_name_claude_models_only_on_anthropic() {
    let text = |model: &str| agent("m", &format!("model: {model}\n"), "b");
    let with = |model: &str| {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "agents/m.md", &text(model));
        Catalog::discover(dir.path(), None)
            .get("m")
            .unwrap()
            .clone()
    };
    let sonnet = with("sonnet");
    assert_eq!(
        sonnet.model_for("anthropic").as_deref(),
        Some("claude-sonnet-4-5")
    );
    assert_eq!(sonnet.model_for("openai"), None);
    assert!(sonnet.model_shown("openai").contains("the parent's"));
    assert_eq!(with("inherit").model_for("anthropic"), None);
    assert_eq!(with("gpt-5").model_for("openai").as_deref(), Some("gpt-5"));
}

#[test]
fn project_wins_over_user_and_odek_over_claude_once_trusted() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    write(home.path(), "agents/rev.md", &agent("rev", "", "user's"));
    let odek = write(
        project.path(),
        ".odek/agents/rev.md",
        &agent("rev", "", "odek's"),
    );
    write(
        project.path(),
        ".claude/agents/rev.md",
        &agent("rev", "", "claude's"),
    );
    write(home.path(), "agents/broken.md", "no front matter");
    let found = || Catalog::discover(home.path(), Some(project.path()));
    let catalog = found();
    assert_eq!(
        catalog.get("rev").unwrap().prompt,
        "user's",
        "untrusted never hides"
    );
    assert_eq!(catalog.shadowed().len(), 2);
    assert_eq!(catalog.broken().len(), 1);
    let warnings = catalog.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("broken.md") && w.contains("front matter"))
    );
    assert!(warnings.iter().any(|w| w.contains("is hidden by")));
    let ours = catalog
        .shadowed()
        .iter()
        .find(|(a, _)| a.path == odek)
        .unwrap();
    trust(home.path(), &ours.0).unwrap();
    let catalog = found();
    let rev = catalog.get("rev").unwrap();
    assert_eq!(
        (rev.prompt.as_str(), rev.origin),
        ("odek's", Origin::Project)
    );
    assert_eq!(catalog.usable().count(), 1);
}

#[test]
fn trust_is_by_the_exact_bytes() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let path = write(
        project.path(),
        ".claude/agents/code-reviewer.md",
        CLAUDE_AGENT,
    );
    let found = || Catalog::discover(home.path(), Some(project.path()));
    let reviewer = found().get("code-reviewer").unwrap().clone();
    assert_eq!(reviewer.origin, Origin::Claude);
    assert!(!reviewer.trusted() && reviewer.why_not().unwrap().contains("odek agents trust"));
    assert_eq!(found().usable().count(), 0);
    trust(home.path(), &reviewer).unwrap();
    assert!(found().get("code-reviewer").unwrap().trusted());
    std::fs::write(&path, CLAUDE_AGENT.replace("senior", "junior")).unwrap();
    let changed = found().get("code-reviewer").unwrap().clone();
    assert!(!changed.trusted());
    assert!(changed.why_not().unwrap().contains("changed since"));
    trust(home.path(), &changed).unwrap();
    assert!(found().get("code-reviewer").unwrap().trusted());
    assert!(untrust(home.path(), &changed).unwrap());
    assert!(!found().get("code-reviewer").unwrap().trusted());
    let user = write(home.path(), "agents/mine.md", &agent("mine", "", "b"));
    let mine = found().get("mine").unwrap().clone();
    assert!(mine.trusted() && mine.path == user);
    assert!(matches!(
        trust(home.path(), &mine),
        Err(AgentError::UserAgent(_))
    ));
}

#[test]
fn a_project_link_is_refused_and_the_home_folder_is_the_users_in_home() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let target = write(home.path(), "elsewhere.md", &agent("ln", "", "b"));
    std::fs::create_dir_all(project.path().join(".odek/agents")).unwrap();
    std::os::unix::fs::symlink(&target, project.path().join(".odek/agents/ln.md")).unwrap();
    let catalog = Catalog::discover(home.path(), Some(project.path()));
    assert!(
        catalog.broken()[0]
            .rule
            .to_string()
            .contains("symbolic link")
    );
    // odek run in the folder whose `.odek` is the odek home.
    let odek_home = project.path().join(".odek");
    write(&odek_home, "agents/own.md", &agent("own", "", "b"));
    let catalog = Catalog::discover(&odek_home, Some(project.path()));
    assert_eq!(catalog.get("own").unwrap().origin, Origin::User);
}
