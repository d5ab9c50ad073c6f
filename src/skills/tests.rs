use super::block::{Limits, render};
use super::*;

struct World {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    extra: PathBuf,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    let extra = tmp.path().join("extra");
    for d in [&home, &project, &extra] {
        std::fs::create_dir_all(d).unwrap();
    }
    World {
        _tmp: tmp,
        home,
        project,
        extra,
    }
}

impl World {
    fn places(&self) -> Places {
        Places {
            home: self.home.join("skills"),
            project: Some(self.project.clone()),
            configured: vec![self.extra.clone()],
        }
    }

    fn catalog(&self) -> Catalog {
        Catalog::discover(&self.places(), &self.home)
    }
}

/// A folder `dir` holding `text` as its SKILL.md.
fn raw_skill(dir: &Path, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(SKILL_FILE), text).unwrap();
}

fn skill(parent: &Path, name: &str, description: &str) -> PathBuf {
    let dir = parent.join(name);
    raw_skill(
        &dir,
        &format!("---\nname: {name}\ndescription: {description}\n---\nHow to {name}.\n"),
    );
    dir
}

const LIMITS: Limits = Limits {
    max_listed: 50,
    max_auto_chars: 8000,
};

#[test]
fn all_places_in_order_the_first_of_a_name_wins() {
    let w = world();
    skill(&w.home.join("skills"), "deploy", "Deploy from home.");
    skill(
        &w.project.join(".odek/skills"),
        "deploy",
        "Deploy from the project.",
    );
    skill(&w.project.join(".agents/skills"), "lint", "Lint the code.");
    skill(&w.extra, "triage", "Triage issues.");
    raw_skill(
        &w.project.join(".odek/skills/Bad"),
        "---\nname: Bad\ndescription: x\n---\n",
    );
    let c = w.catalog();
    let names: Vec<(&str, Origin)> = c.skills.iter().map(|s| (s.name(), s.origin)).collect();
    assert_eq!(
        names,
        [
            ("deploy", Origin::Home),
            ("lint", Origin::Agents),
            ("triage", Origin::Configured)
        ]
    );
    assert_eq!(c.shadowed.len(), 1);
    let warnings = c.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with("odek: skipping skill ")
            && warnings[0].contains("Bad/SKILL.md: `name` (\"Bad\")")
    );
    assert!(warnings[1].contains("\"deploy\"") && warnings[1].contains("is hidden by the one in"));
}

/// Issue 43: a skill nobody trusted gives its name and description and nothing more — its
/// `odek.auto_load` and `allowed-tools` are not read — until it is trusted.
#[test]
fn an_untrusted_skill_is_read_for_its_name_and_description_only() {
    let w = world();
    let dir = w.project.join(".odek/skills/loud");
    raw_skill(
        &dir,
        "---\nname: loud\ndescription: Says things.\nallowed-tools: shell\nlicense: MIT\nodek:\n  auto_load: true\n---\nBody.\n",
    );
    let c = w.catalog();
    let loud = c.get("loud").unwrap();
    assert_eq!(loud.front.description, "Says things.");
    assert!(!loud.front.auto_load && loud.front.allowed_tools.is_empty());
    assert_eq!(loud.front.license, None);
    assert_eq!(c.body(loud).unwrap(), "Body.\n");
    trust::TrustStore::update(&w.home, |s| s.trust(&dir, "loud")).unwrap();
    let c = w.catalog();
    let loud = c.get("loud").unwrap();
    assert!(loud.front.auto_load && loud.front.allowed_tools == ["shell"]);
    assert_eq!(loud.front.license.as_deref(), Some("MIT"));
}

/// The YAML of one front matter is parsed once per process, whatever reads it again.
#[test]
fn a_front_matter_is_parsed_once_and_then_taken_from_the_cache() {
    let text = "---\nname: cached-once\ndescription: Unique to this test.\n---\n";
    let yaml = "name: cached-once\ndescription: Unique to this test.\n";
    assert!(!frontmatter::is_cached(yaml));
    let first = frontmatter::parse(text, "cached-once").unwrap();
    assert!(frontmatter::is_cached(yaml));
    assert_eq!(frontmatter::parse(text, "cached-once").unwrap(), first);
    assert_eq!(
        frontmatter::declared_name(text).as_deref(),
        Some("cached-once")
    );
}

#[test]
fn a_project_skill_is_offered_only_while_trusted_and_unchanged() {
    let w = world();
    let dir = skill(&w.project.join(".odek/skills"), "lint", "Lint the code.");
    let lint = |c: &Catalog| c.get("lint").cloned().unwrap();
    let c = w.catalog();
    assert!(!lint(&c).offered());
    assert!(
        lint(&c)
            .why_not_offered()
            .unwrap()
            .contains("odek skill trust lint")
    );
    assert!(render(&c, LIMITS).is_none(), "nothing offered, no block");
    trust::TrustStore::update(&w.home, |s| s.trust(&dir, "lint")).unwrap();
    let c = w.catalog();
    assert!(lint(&c).offered() && lint(&c).trusted());
    assert!(
        render(&c, LIMITS)
            .unwrap()
            .contains("- lint: Lint the code.")
    );
    std::fs::write(dir.join("notes.md"), "slipped in").unwrap();
    let c = w.catalog();
    assert!(!lint(&c).offered());
    assert!(
        lint(&c)
            .why_not_offered()
            .unwrap()
            .contains("changed since it was trusted")
    );
}

#[test]
fn the_block_is_sorted_stable_bounded_and_wraps_what_is_not_trusted() {
    let w = world();
    for i in (0..60).rev() {
        skill(
            &w.home.join("skills"),
            &format!("skill-{i:02}"),
            &format!("Does\n  thing {i}."),
        );
    }
    skill(&w.extra, "outside", "From a configured folder.");
    let limits = Limits {
        max_listed: 50,
        max_auto_chars: 8000,
    };
    let first = render(&w.catalog(), limits).unwrap();
    assert_eq!(
        render(&w.catalog(), limits).unwrap(),
        first,
        "byte-identical"
    );
    assert!(first.starts_with(block::SKILLS_HEADER));
    assert!(first.contains("- skill-00: Does thing 0.\n- skill-01:"));
    assert!(!first.contains("skill-50"), "50 listed");
    assert!(first.contains("…and 11 more: skill_list shows them."));
    let w2 = world();
    skill(&w2.extra, "outside", "From a configured folder.");
    let wrapped = render(&w2.catalog(), limits).unwrap();
    assert!(wrapped.contains("<untrusted_content_") && wrapped.contains("source=\"skills\""));
    assert!(wrapped.contains("- outside: From a configured folder."));
}

#[test]
fn auto_loaded_bodies_within_their_budget() {
    let w = world();
    raw_skill(
        &w.home.join("skills/always"),
        "---\nname: always\ndescription: Always on.\nodek:\n  auto_load: true\n---\nAlways run the linter first.\n",
    );
    raw_skill(
        &w.home.join("skills/big"),
        &format!(
            "---\nname: big\ndescription: Big.\nodek:\n  auto_load: true\n---\n{}\n",
            "x".repeat(9000)
        ),
    );
    let text = render(&w.catalog(), LIMITS).unwrap();
    assert!(text.contains("[Skill always (auto-loaded; folder: "));
    assert!(text.contains("Always run the linter first."));
    assert!(text.contains("[Skill big is marked auto_load but over skills.max_auto_chars (8000)"));
    assert!(!text.contains(&"x".repeat(100)));
}

#[test]
fn long_descriptions_share_the_listing_budget() {
    let w = world();
    let long = "Use this skill when the task needs it. ".repeat(25);
    for i in 0..80 {
        skill(
            &w.home.join("skills"),
            &format!("skill-{i:02}"),
            long.trim(),
        );
    }
    let text = render(&w.catalog(), LIMITS).unwrap();
    let listing: usize = text
        .lines()
        .filter(|l| l.starts_with("- "))
        .map(str::len)
        .sum();
    assert!(listing <= block::LISTING_BUDGET_CHARS + 50 * 8, "{listing}");
    let line = text
        .lines()
        .find(|l| l.starts_with("- skill-00: "))
        .unwrap();
    assert!(line.ends_with('…') && line.chars().count() >= block::MIN_DESCRIPTION_CHARS);

    let few = world();
    skill(&few.home.join("skills"), "one", long.trim());
    let text = render(&few.catalog(), LIMITS).unwrap();
    let line = text.lines().find(|l| l.starts_with("- one: ")).unwrap();
    assert_eq!(
        line.chars().count(),
        "- one: ".len() + block::LISTED_DESCRIPTION_CHARS
    );
}

#[test]
fn the_home_folder_searched_again_as_the_projects_is_not_a_duplicate() {
    let tmp = tempfile::tempdir().unwrap();
    let odek_home = tmp.path().join(".odek");
    skill(&odek_home.join("skills"), "deploy", "Deploy.");
    let places = Places {
        home: odek_home.join("skills"),
        project: Some(tmp.path().to_path_buf()),
        configured: vec![],
    };
    let c = Catalog::discover(&places, &odek_home);
    assert_eq!(c.skills.len(), 1);
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
}

#[test]
fn a_projects_untrusted_skill_never_hides_one_the_user_chose() {
    let w = world();
    skill(
        &w.project.join(".odek/skills"),
        "triage",
        "From the repository.",
    );
    skill(&w.extra, "triage", "From the user's folder.");
    let c = w.catalog();
    let triage = c.get("triage").unwrap();
    assert_eq!(triage.origin, Origin::Configured);
    assert!(triage.offered());
    assert_eq!(c.shadowed[0].0.origin, Origin::Project);
}

#[test]
fn a_trusted_project_skill_is_read_only_while_its_folder_matches() {
    let w = world();
    let dir = skill(&w.project.join(".odek/skills"), "lint", "Lint.");
    std::fs::write(dir.join("notes.md"), "reference").unwrap();
    trust::TrustStore::update(&w.home, |s| s.trust(&dir, "lint")).unwrap();
    let c = w.catalog();
    let lint = c.get("lint").unwrap();
    assert_eq!(c.body(lint).unwrap(), "How to lint.\n");
    std::fs::write(dir.join("notes.md"), "changed reference").unwrap();
    let e = c.body(lint).unwrap_err().to_string();
    assert!(e.contains("changed since the user trusted it"), "{e}");
}
