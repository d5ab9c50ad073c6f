//! getopt-style reading of a program's arguments: short option clusters (`-rf`, `-ofile`),
//! long options (`--output=x`, `--output x`), `--`, and operands.

use super::syntax::Word;

/// Which options take a value.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct OptionSpec<'s> {
    /// Short options that take a value (attached or as the next word).
    pub short_values: &'s str,
    /// Long options (without `--`) that take the next word as value when written without `=`.
    pub long_values: &'s [&'s str],
    /// Stop at the first operand (a wrapper: what follows is another command).
    pub stop_at_operand: bool,
}

impl<'s> OptionSpec<'s> {
    /// Options with values, reading the whole command line.
    pub const fn new(short_values: &'s str, long_values: &'s [&'s str]) -> Self {
        Self {
            short_values,
            long_values,
            stop_at_operand: false,
        }
    }

    /// Options with values, stopping at the first operand.
    pub const fn wrapper(short_values: &'s str, long_values: &'s [&'s str]) -> Self {
        Self {
            short_values,
            long_values,
            stop_at_operand: true,
        }
    }
}

/// The options and operands of one command line.
#[derive(Clone, Debug, Default)]
pub(super) struct CommandLine<'w> {
    pub shorts: Vec<(char, Option<Word>)>,
    pub longs: Vec<(String, Option<Word>)>,
    pub operands: Vec<&'w Word>,
    /// Index (in the arguments) of the first operand: where a wrapped command starts.
    pub first_operand: Option<usize>,
}

impl CommandLine<'_> {
    pub fn has_short(&self, flag: char) -> bool {
        self.shorts.iter().any(|(name, _)| *name == flag)
    }

    pub fn has_long(&self, name: &str) -> bool {
        self.longs.iter().any(|(long, _)| long == name)
    }

    /// Any long option whose name starts with `prefix` (`--data` matches `--data-binary`).
    pub fn has_long_prefix(&self, prefix: &str) -> bool {
        self.longs.iter().any(|(long, _)| long.starts_with(prefix))
    }

    pub fn has(&self, short: char, long: &str) -> bool {
        self.has_short(short) || self.has_long(long)
    }

    /// Every value given to the short option `short` or the long option `long`.
    pub fn values<'a>(&'a self, short: char, long: &'a str) -> impl Iterator<Item = &'a Word> {
        let shorts = self
            .shorts
            .iter()
            .filter(move |(name, _)| *name == short)
            .filter_map(|(_, value)| value.as_ref());
        let longs = self
            .longs
            .iter()
            .filter(move |(name, _)| name == long)
            .filter_map(|(_, value)| value.as_ref());
        shorts.chain(longs)
    }

    pub fn value<'a>(&'a self, short: char, long: &'a str) -> Option<&'a Word> {
        self.values(short, long).next()
    }
}

/// Reads `args` as options and operands.
pub(super) fn parse<'w>(args: &'w [Word], spec: OptionSpec) -> CommandLine<'w> {
    let mut line = CommandLine::default();
    let mut index = 0;
    let mut only_operands = false;
    while let Some(word) = args.get(index) {
        let text = word.text.as_str();
        let is_operand = only_operands || text == "-" || !text.starts_with('-');
        if is_operand {
            line.first_operand.get_or_insert(index);
            if spec.stop_at_operand {
                break;
            }
            line.operands.push(word);
        } else if text == "--" {
            only_operands = true;
            if spec.stop_at_operand {
                line.first_operand = (index + 1 < args.len()).then_some(index + 1);
                break;
            }
        } else if let Some(long) = text.strip_prefix("--") {
            index = read_long(&mut line, args, index, long, spec);
        } else {
            index = read_short_cluster(&mut line, args, index, spec);
        }
        index += 1;
    }
    line
}

fn read_long(
    line: &mut CommandLine,
    args: &[Word],
    mut index: usize,
    long: &str,
    spec: OptionSpec,
) -> usize {
    let (name, value) = match long.split_once('=') {
        Some((name, value)) => (name, Some(part_of(&args[index], value))),
        None => (long, None),
    };
    let value = if value.is_none() && spec.long_values.contains(&name) {
        index += 1;
        args.get(index).cloned()
    } else {
        value
    };
    line.longs.push((name.to_string(), value));
    index
}

fn read_short_cluster(
    line: &mut CommandLine,
    args: &[Word],
    mut index: usize,
    spec: OptionSpec,
) -> usize {
    let word = &args[index];
    let cluster: Vec<char> = word.text.chars().skip(1).collect();
    for (position, &flag) in cluster.iter().enumerate() {
        if spec.short_values.contains(flag) {
            let attached: String = cluster[position + 1..].iter().collect();
            let value = if attached.is_empty() {
                index += 1;
                args.get(index).cloned()
            } else {
                Some(part_of(word, &attached))
            };
            line.shorts.push((flag, value));
            return index;
        }
        line.shorts.push((flag, None));
    }
    index
}

/// A value cut out of `word`, keeping its dynamic flag.
fn part_of(word: &Word, text: &str) -> Word {
    word.with_text(text)
}

/// Index of the first operand (where a wrapped command starts), if any.
pub(super) fn first_operand(
    args: &[Word],
    short_values: &str,
    long_values: &[&str],
) -> Option<usize> {
    parse(args, OptionSpec::wrapper(short_values, long_values)).first_operand
}
