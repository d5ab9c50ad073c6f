//! Giving the binary's code pages back while a long-lived process idles (Linux; elsewhere
//! [`release`] gives nothing back and says so with an `Unsupported` error: macOS has no
//! `/proc/self/smaps` to tell a clean mapping from one the process changed).
//!
//! Most of an idle `odek acp`'s resident memory is not its own: it is the executable's code
//! and read-only data, mapped from the page cache in 64 KiB windows around every page the
//! start-up touched (about 8 MiB of the 11 MiB; `docs/PERFORMANCE.md`, "odek acp"). Those
//! pages are clean copies of the file: dropping the process's mappings of them
//! (`madvise(MADV_DONTNEED)`) loses nothing — the pages stay in the page cache, shared and
//! reclaimable, and the next instruction that needs one maps it again with a minor fault.
//!
//! Only mappings of the process's own executable that cannot be written (`r-xp`, `r--p`)
//! and hold no page the process changed (`Anonymous: 0 kB` in `/proc/self/smaps`: a page
//! written through a private mapping becomes the process's own copy) are released: a page
//! written at start-up (relocations, RELRO) would be read back from the file unrelocated,
//! so such a mapping is left alone. (`Private_Dirty` is no test: it also counts page-cache
//! pages not yet written back, as in a binary just built.)

/// What a release did: the mappings given back and their resident size before.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    /// Mappings released.
    pub mappings: usize,
    /// Their resident KiB before the release.
    pub kib: u64,
}

/// One mapping of `/proc/self/smaps`: its range, permissions, file, resident size and the
/// part of it that is the process's own copy.
#[cfg(any(target_os = "linux", test))]
#[derive(Debug, Default, PartialEq, Eq)]
struct Mapping {
    start: usize,
    end: usize,
    perms: String,
    path: String,
    rss_kib: u64,
    anonymous_kib: u64,
}

#[cfg(any(target_os = "linux", test))]
impl Mapping {
    /// True when dropping its pages loses nothing: a private, unwritable mapping of `exe`
    /// with resident pages, none of them the process's own copy.
    fn releasable(&self, exe: &str) -> bool {
        self.path == exe
            && self.perms.starts_with('r')
            && !self.perms.contains('w')
            && self.perms.ends_with('p')
            && self.rss_kib > 0
            && self.anonymous_kib == 0
    }
}

/// Parses `/proc/self/smaps`: each mapping with its `Rss` and `Anonymous`.
#[cfg(any(target_os = "linux", test))]
fn parse_smaps(smaps: &str) -> Vec<Mapping> {
    let mut mappings: Vec<Mapping> = Vec::new();
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else {
            continue;
        };
        if let Some((start, end)) = first.split_once('-') {
            let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) else {
                continue;
            };
            let perms = fields.next().unwrap_or_default().to_string();
            // offset, device, inode, then the path (which may hold spaces).
            let path = fields.skip(3).collect::<Vec<_>>().join(" ");
            mappings.push(Mapping {
                start,
                end,
                perms,
                path,
                ..Mapping::default()
            });
            continue;
        }
        let (Some(mapping), Some(kib)) = (
            mappings.last_mut(),
            fields.next().and_then(|v| v.parse::<u64>().ok()),
        ) else {
            continue;
        };
        match first {
            "Rss:" => mapping.rss_kib = kib,
            "Anonymous:" => mapping.anonymous_kib = kib,
            _ => {}
        }
    }
    mappings
}

/// Releases the executable's clean read-only mappings (see the module docs). Blocking: it
/// reads `/proc/self/smaps`.
#[cfg(target_os = "linux")]
pub fn release() -> std::io::Result<Released> {
    let exe = std::fs::read_link("/proc/self/exe")?;
    let exe = exe.to_string_lossy();
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    let mut released = Released::default();
    for mapping in parse_smaps(&smaps).iter().filter(|m| m.releasable(&exe)) {
        #[allow(unsafe_code)]
        // SAFETY: the range is a whole mapping of this process, private, never writable and
        // without a page of its own (no anonymous copy): MADV_DONTNEED only drops the page
        // table entries, and the next access maps the same bytes of the file again.
        let rc = unsafe {
            libc::madvise(
                mapping.start as *mut libc::c_void,
                mapping.end - mapping.start,
                libc::MADV_DONTNEED,
            )
        };
        if rc == 0 {
            released.mappings += 1;
            released.kib += mapping.rss_kib;
        }
    }
    Ok(released)
}

/// Elsewhere nothing is released (see the module docs): an `Unsupported` error that says so.
#[cfg(not(target_os = "linux"))]
pub fn release() -> std::io::Result<Released> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "code pages are given back on Linux only (docs/PLATFORMS.md)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
00400000-00401000 r--p 00000000 08:01 42 /opt/odek bin
Rss:                   4 kB
Anonymous:             0 kB
00401000-00b89000 r-xp 00001000 08:01 42 /opt/odek bin
Size:               7712 kB
Rss:                6416 kB
Private_Dirty:      6416 kB
Anonymous:             0 kB
00f34000-00f42000 rw-p 00b34000 08:01 42 /opt/odek bin
Rss:                  56 kB
Anonymous:            56 kB
00f50000-00f52000 r--p 00b50000 08:01 42 /opt/odek bin
Rss:                   8 kB
Anonymous:             8 kB
7ff5667a0000-7ff5669e0000 rw-p 00000000 00:00 0
Rss:                   8 kB
Anonymous:             8 kB
7ff566748000-7ff566750000 r--p 00000000 08:01 77 /usr/lib/other.so
Rss:                  32 kB
Anonymous:             0 kB
";

    #[test]
    fn only_the_executables_clean_read_only_mappings_are_released() {
        let mappings = parse_smaps(SMAPS);
        assert_eq!(mappings.len(), 6);
        assert_eq!(mappings[1].start, 0x401000);
        assert_eq!(mappings[1].end, 0xb89000);
        assert_eq!(mappings[1].path, "/opt/odek bin");
        assert_eq!(mappings[1].rss_kib, 6416);
        let releasable: Vec<usize> = mappings
            .iter()
            .filter(|m| m.releasable("/opt/odek bin"))
            .map(|m| m.start)
            .collect();
        // Not the data (writable), not the page changed at start-up, not another file's;
        // the code is released though its page-cache pages are not written back yet.
        assert_eq!(releasable, [0x400000, 0x401000]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_release_gives_the_code_pages_back_and_the_code_runs_on() {
        let resident = || {
            let exe = std::fs::read_link("/proc/self/exe").expect("exe");
            let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
            parse_smaps(&smaps)
                .iter()
                .filter(|m| m.releasable(&exe.to_string_lossy()))
                .map(|m| m.rss_kib)
                .sum::<u64>()
        };
        let before = resident();
        let released = release().expect("release");
        assert!(released.mappings >= 1, "{released:?}");
        assert!(released.kib >= before / 2, "{released:?} of {before} KiB");
        // The code runs on (this very test), mapped again page by page as it is needed.
        let after = resident();
        assert!(
            after < before,
            "{after} KiB resident after, {before} before"
        );
    }
}
