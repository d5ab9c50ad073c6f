//! `odek skill list|show|new|validate|trust|untrust|import|remove`: skills, for people
//! (docs/SKILLS.md).

use crate::text::visible;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::json;

use super::Exit;
use crate::config::LoadOptions;
use crate::skills::trust::TrustStore;
use crate::skills::{Catalog, Origin, Places, SKILL_FILE, Skill, frontmatter, import};

/// Arguments of `odek skill`.
#[derive(Debug, Args)]
pub struct SkillArgs {
    #[command(subcommand)]
    command: SkillCommand,
}

#[derive(Debug, Subcommand)]
enum SkillCommand {
    /// Every skill found, where, and whether the model is offered it (and why not)
    List {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// A skill's front matter, files and instructions
    Show {
        /// The skill's name
        name: String,
    },
    /// Write a valid skeleton: <home>/skills/NAME/SKILL.md (or the project's with --project)
    New {
        /// The name: lowercase letters, digits and hyphens
        name: String,
        /// What the skill is for and when to use it
        #[arg(long, short)]
        description: Option<String>,
        /// In the project's .odek/skills (it then needs `odek skill trust`)
        #[arg(long)]
        project: bool,
    },
    /// Check a skill folder, a folder of skills, or (without PATH) every skill found; exit 1
    /// when one breaks a rule
    Validate {
        /// A skill folder, its SKILL.md, or a folder of skill folders
        path: Option<PathBuf>,
    },
    /// Offer a project's skill to the model: records a hash of its whole folder
    Trust {
        /// The skill's name
        name: String,
    },
    /// Stop offering a project's skill
    Untrust {
        /// The skill's name
        name: String,
    },
    /// Copy a skill folder, a folder of skills, or a .zip / .tar.gz of either into
    /// <home>/skills (no `..`, no absolute paths, no links out; size-checked)
    Import {
        /// The folder or archive
        path: PathBuf,
        /// Replace installed skills of the same name
        #[arg(long)]
        force: bool,
    },
    /// Delete a skill of <home>/skills
    Remove {
        /// The skill's name
        name: String,
    },
}

/// What the commands share: the odek home and where skills are looked for.
struct Ctx {
    home: PathBuf,
    places: Places,
}

impl Ctx {
    fn catalog(&self) -> Catalog {
        Catalog::discover(&self.places, &self.home)
    }

    fn find(&self, name: &str) -> crate::error::Fallible<Skill> {
        self.catalog().get(name).cloned().ok_or_else(|| {
            anyhow::anyhow!("no skill named \"{name}\" (odek skill list shows them)").into()
        })
    }
}

/// Runs `odek skill …`.
pub fn run(args: SkillArgs) -> crate::error::Fallible<Exit> {
    let resolved = crate::config::load(&LoadOptions::from_process(Default::default()))?;
    resolved.warnings.iter().for_each(|w| eprintln!("{w}"));
    let cwd = std::env::current_dir()?;
    let project = PathBuf::from(crate::memory::project_key(&cwd));
    let ctx = Ctx {
        places: Places::new(&resolved.home, &project, &resolved.config.skills),
        home: resolved.home,
    };
    match args.command {
        SkillCommand::List { json } => list(&ctx, json),
        SkillCommand::Show { name } => show(&ctx.catalog(), &name),
        SkillCommand::New {
            name,
            description,
            project: in_project,
        } => new(&ctx, &project, &name, description.as_deref(), in_project),
        SkillCommand::Validate { path } => validate(&ctx, path.as_deref()),
        SkillCommand::Trust { name } => trust(&ctx, &name),
        SkillCommand::Untrust { name } => untrust(&ctx, &name),
        SkillCommand::Import { path, force } => {
            let names = import::import(&path, &ctx.places.home, force)?;
            for name in names {
                println!(
                    "Imported skill {name} into {}",
                    ctx.places.home.join(&name).display()
                );
            }
            Ok(Exit::Success)
        }
        SkillCommand::Remove { name } => remove(&ctx, &name),
    }
}

/// The REPL's `/skills`: `odek skill list` for the REPL's configuration and directory.
pub(super) fn print_skills(config: &crate::config::Config, home: &Path, cwd: &Path) {
    let project = PathBuf::from(crate::memory::project_key(cwd));
    let ctx = Ctx {
        places: Places::new(home, &project, &config.skills),
        home: home.to_path_buf(),
    };
    let _ = list(&ctx, false);
}

fn list(ctx: &Ctx, as_json: bool) -> crate::error::Fallible<Exit> {
    let catalog = ctx.catalog();
    if as_json {
        let skills: Vec<_> = catalog.skills.iter().map(|s| s.view()).collect();
        let broken: Vec<_> = catalog
            .broken
            .iter()
            .map(|b| json!({"file": b.file, "origin": b.origin.label(), "rule": b.rule}))
            .collect();
        let hidden: Vec<_> = catalog
            .shadowed
            .iter()
            .map(|(s, winner)| json!({"name": s.name(), "dir": s.dir, "hidden_by": winner}))
            .collect();
        let out = json!({"skills": skills, "broken": broken, "hidden": hidden});
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(Exit::Success);
    }
    if catalog.skills.is_empty() && catalog.broken.is_empty() {
        println!(
            "No skills. Write one with `odek skill new NAME`, or import a folder or archive with `odek skill import PATH`."
        );
    }
    for s in &catalog.skills {
        println!("{}  [{}] {}", s.name(), s.origin.label(), s.status());
        println!(
            "    {}",
            visible(&crate::text::first_line(&s.front.description, 100), false)
        );
    }
    for b in &catalog.broken {
        println!(
            "(broken) {}  [{}] {}",
            b.file.display(),
            b.origin.label(),
            b.rule
        );
    }
    for (s, winner) in &catalog.shadowed {
        println!(
            "(hidden) {} in {}: a skill of that name comes first, in {}",
            s.name(),
            s.dir.display(),
            winner.display()
        );
    }
    if let Some(problem) = &catalog.trust_problem {
        eprintln!("odek: warning: {problem}");
    }
    Ok(Exit::Success)
}

fn show(catalog: &Catalog, name: &str) -> crate::error::Fallible<Exit> {
    let skill = catalog
        .get(name)
        .ok_or_else(|| anyhow::anyhow!("no skill named \"{name}\" (odek skill list shows them)"))?;
    let f = &skill.front;
    println!("name: {}", f.name);
    println!("folder: {}", skill.dir.display());
    println!("origin: {}", skill.origin.label());
    println!("status: {}", skill.status());
    println!("description: {}", visible(&f.description, false));
    if !skill.trusted() {
        // Nothing else of it was read: the user reads the whole file to decide.
        println!("(not trusted: odek reads only its name and description; its whole file follows)");
        println!();
        let (_, text) = crate::skills::read_skill_text(&skill.dir)?;
        print!("{}", visible(&text, true));
        return Ok(Exit::Success);
    }
    let optional = [
        ("license", f.license.clone()),
        ("compatibility", f.compatibility.clone()),
        (
            "allowed-tools",
            (!f.allowed_tools.is_empty()).then(|| f.allowed_tools.join(", ")),
        ),
        ("auto_load", f.auto_load.then(|| "true".to_string())),
        (
            "other keys",
            (!f.other_keys.is_empty()).then(|| f.other_keys.join(", ")),
        ),
    ];
    for (key, value) in optional {
        if let Some(v) = value {
            println!("{key}: {}", visible(&v, false));
        }
    }
    for (key, value) in &f.metadata {
        println!(
            "metadata.{}: {}",
            visible(key, false),
            visible(value, false)
        );
    }
    for (key, value) in &f.trigger {
        println!(
            "odek.trigger.{}: {}",
            visible(key, false),
            visible(value, false)
        );
    }
    println!();
    // What is there now, trusted or not: the user reads it to decide.
    let body = crate::skills::read_skill_file(&skill.dir)?;
    print!("{}", visible(&body.body, true));
    Ok(Exit::Success)
}

fn new(
    ctx: &Ctx,
    project: &Path,
    name: &str,
    description: Option<&str>,
    in_project: bool,
) -> crate::error::Fallible<Exit> {
    frontmatter::check_name(name, name).map_err(|rule| anyhow::anyhow!("{rule}"))?;
    let parent = if in_project {
        project.join(".odek").join("skills")
    } else {
        ctx.places.home.clone()
    };
    let dir = parent.join(name);
    if dir.exists() {
        crate::error::bail!("{} already exists", dir.display());
    }
    let description = description.unwrap_or(
        "TODO: what this skill does and when to use it (the model decides from this line).",
    );
    let text = skeleton(name, description);
    frontmatter::parse(&text, name).map_err(|rule| anyhow::anyhow!("{rule}"))?;
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(SKILL_FILE), text)?;
    println!("Wrote {}", dir.join(SKILL_FILE).display());
    if in_project {
        println!("It is offered to the model once you run `odek skill trust {name}`.");
    }
    Ok(Exit::Success)
}

/// A valid `SKILL.md` to start from; the description is quoted as YAML.
fn skeleton(name: &str, description: &str) -> String {
    let quoted = serde_json::to_string(description).unwrap_or_default();
    format!(
        "---\nname: {name}\ndescription: {quoted}\n---\n\n# {name}\n\nSteps the agent follows for this kind of work:\n\n1. …\n\nScripts in `scripts/` and references in `references/` beside this file can be\nused with the usual tools.\n"
    )
}

fn validate(ctx: &Ctx, path: Option<&Path>) -> crate::error::Fallible<Exit> {
    let mut broken = 0;
    let mut checked = 0;
    let mut report = |dir: &Path, result: Result<String, crate::skills::Rule>| {
        checked += 1;
        match result {
            Ok(name) => println!("ok      {name}  ({})", dir.display()),
            Err(rule) => {
                broken += 1;
                println!("broken  {}: {rule}", dir.join(SKILL_FILE).display());
            }
        }
    };
    let dirs: Vec<PathBuf> = match path {
        Some(p) => folders_to_validate(p)?,
        None => ctx
            .places
            .folders()
            .into_iter()
            .flat_map(|(folder, _)| crate::skills::skill_dirs(&folder))
            .collect(),
    };
    for dir in &dirs {
        let result = crate::skills::read_skill_file(dir).map(|f| f.front.name);
        report(dir, result);
    }
    if checked == 0 {
        println!("No skills to check.");
    }
    Ok(if broken > 0 {
        Exit::Failure
    } else {
        Exit::Success
    })
}

/// A skill folder, the folder of a `SKILL.md`, or the skill folders inside a folder.
fn folders_to_validate(path: &Path) -> crate::error::Fallible<Vec<PathBuf>> {
    if path.file_name().is_some_and(|n| n == SKILL_FILE) {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        return Ok(vec![dir.to_path_buf()]);
    }
    if !path.is_dir() {
        crate::error::bail!("{} is not a folder or a SKILL.md", path.display());
    }
    if path.join(SKILL_FILE).exists() {
        return Ok(vec![path.to_path_buf()]);
    }
    let inside = crate::skills::skill_dirs(path);
    if inside.is_empty() {
        crate::error::bail!("no SKILL.md in {} or its folders", path.display());
    }
    Ok(inside)
}

fn trust(ctx: &Ctx, name: &str) -> crate::error::Fallible<Exit> {
    let skill = ctx.find(name)?;
    let recorded = skill
        .trust_now(&ctx.home)
        .map_err(|e| anyhow::anyhow!("cannot trust {name}: {e}"))?;
    if !recorded {
        println!(
            "{name} is in {}: trusted already.",
            ctx.places.home.display()
        );
        return Ok(Exit::Success);
    }
    println!(
        "Trusted {name} ({}). A change to any file of it needs trust again.",
        skill.dir.display()
    );
    Ok(Exit::Success)
}

fn untrust(ctx: &Ctx, name: &str) -> crate::error::Fallible<Exit> {
    let skill = ctx.find(name)?;
    if skill.origin == Origin::Home {
        crate::error::bail!(
            "{name} is in {}, which is always trusted: remove it with `odek skill remove {name}`",
            ctx.places.home.display()
        );
    }
    let removed = TrustStore::update(&ctx.home, |store| Ok(store.untrust(&skill.dir)))?;
    if removed {
        println!("{name} is no longer trusted.");
    } else {
        println!("{name} was not trusted.");
    }
    Ok(Exit::Success)
}

fn remove(ctx: &Ctx, name: &str) -> crate::error::Fallible<Exit> {
    let skill = ctx.find(name)?;
    if skill.origin != Origin::Home {
        crate::error::bail!(
            "{name} belongs to {} ({}); odek removes only skills of {}",
            skill.origin.label(),
            skill.dir.display(),
            ctx.places.home.display()
        );
    }
    std::fs::remove_dir_all(&skill.dir)?;
    println!("Removed {name} ({}).", skill.dir.display());
    Ok(Exit::Success)
}
