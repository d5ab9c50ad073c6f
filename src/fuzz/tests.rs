//! Every fuzz target over its seeds, a few hostile inputs of its kind, and thousands of
//! mutations of them (the same mutations each run): none may panic. The long runs are
//! libFuzzer's (`make fuzz`, figures in docs/FUZZING.md).

use super::TARGETS;

/// Mutations per target on every `make test`.
const MUTATIONS: usize = 1500;

/// A small deterministic generator (xorshift64*): the same inputs every run.
struct Mutator(u64);

impl Mutator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            usize::try_from(self.next() % n as u64).unwrap_or(0)
        }
    }

    /// One to four edits of `input`: a byte changed, inserted or removed, a run repeated,
    /// a piece of another seed spliced in.
    fn mutate(&mut self, input: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
        let mut out = input.to_vec();
        for _ in 0..=self.below(4) {
            let at = self.below(out.len() + 1);
            match self.below(6) {
                0 if at < out.len() => out[at] = self.next() as u8,
                1 => out.insert(at, INTERESTING[self.below(INTERESTING.len())]),
                2 if at < out.len() => {
                    out.remove(at);
                }
                3 => {
                    let len = self.below(16).min(out.len() - at.min(out.len()));
                    let piece = out[at..at + len].to_vec();
                    for _ in 0..self.below(64) {
                        out.splice(at..at, piece.iter().copied());
                    }
                }
                4 if !others.is_empty() => {
                    let other = &others[self.below(others.len())];
                    let from = self.below(other.len());
                    let len = self.below(other.len() - from + 1);
                    out.splice(at..at, other[from..from + len].iter().copied());
                }
                _ => out.truncate(at),
            }
        }
        out
    }
}

/// Bytes that matter to the formats fuzzed.
const INTERESTING: &[u8] = b"<>/\"'{}[]:,\n\r\\-&#;=!?*%\0\xff\xc3";

fn seeds(name: &str) -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read(p).expect("seed"))
        .collect()
}

/// Inputs made to hurt each parser: deep nesting, long runs, broken encodings.
fn hostile(name: &str) -> Vec<Vec<u8>> {
    let nested =
        |open: &str, close: &str, n: usize| format!("{}x{}", open.repeat(n), close.repeat(n));
    let texts: Vec<String> = match name {
        "html_to_markdown" => vec![
            nested("<div>", "</div>", 20_000),
            "<span><div></span>".repeat(5_000),
            "<b><i><u><a href=x>".repeat(3_000),
            "<table><tr><td>".repeat(3_000),
            "<li>".repeat(20_000),
            format!("<p>{}</p>", "&amp;".repeat(50_000)),
            "<!--".repeat(10_000),
            "<a \"".repeat(10_000),
        ],
        "skill_front_matter" => vec![
            format!("---\nname: x\ndescription: {}\n---\n", "[".repeat(100_000)),
            format!("---\nname: x\n{}\n---\n", "  a:\n".repeat(5_000)),
            format!("---\n{}---\n", "a: &a [*a, *a]\n".repeat(100)),
            format!(
                "---\nname: x\ndescription: '{}'\n---\n",
                "x".repeat(200_000)
            ),
            format!(
                "---\nname: x\n{}---\nb\n",
                "description: a: b\n".repeat(800)
            ),
        ],
        "model_answer" => vec![
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
            format!("\0data: {}\n\n", "{\"a\":".repeat(10_000)),
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":99999999}]}}]}\n\n"
                .to_string(),
            "data: x\n\n".repeat(10_000),
        ],
        "mcp_message" => vec![
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"content\":{}}}}}",
                nested("[", "]", 10_000)
            ),
            "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":".repeat(1_000),
        ],
        "telegram_updates" => vec![
            format!(
                "{{\"ok\":true,\"result\":[{}]}}",
                "{\"update_id\":1,\"message\":{\"chat\":{\"id\":1},\"text\":\"/a\"}},"
                    .repeat(2_000)
                    + "{\"update_id\":2}"
            ),
            format!("{{\"result\":{}}}", nested("[", "]", 10_000)),
        ],
        _ => vec![
            format!(
                "{{\"content\":\"x\",\"attachments\":[{}]}}",
                "{\"name\":\"i\",\"image\":\"////\"},".repeat(100)
                    + "{\"name\":\"j\",\"text\":\"\"}"
            ),
            nested("{\"a\":", "}", 10_000),
        ],
    };
    texts.into_iter().map(String::into_bytes).collect()
}

#[test]
fn every_target_survives_its_seeds_hostile_inputs_and_mutations() {
    for target in TARGETS {
        let seeds = seeds(target.name);
        assert!(!seeds.is_empty(), "{}: no seeds", target.name);
        for input in seeds.iter().chain(hostile(target.name).iter()) {
            (target.run)(input);
        }
        let mut mutator = Mutator(0x9e37_79b9_7f4a_7c15 ^ target.name.len() as u64);
        let mut current = seeds[0].clone();
        for i in 0..MUTATIONS {
            if i % 50 == 0 {
                current = seeds[i / 50 % seeds.len()].clone();
            }
            current = mutator.mutate(&current, &seeds);
            current.truncate(64 * 1024);
            (target.run)(&current);
        }
    }
}

#[test]
fn run_finds_targets_by_name_and_ignores_unknown_ones() {
    super::run("html_to_markdown", b"<p>x</p>");
    super::run("no such target", b"x");
    assert_eq!(TARGETS.len(), 6);
}
