//! Programs that only read and print — with the options known to keep them that way.
//!
//! A program here is safe only when every option it is given is listed for it: an option
//! nobody listed (`rg --pre ./script.sh`, `bat --pager CMD`, `journalctl --vacuum-size=1`,
//! `dmesg -c`) makes the command `code_execution`, which asks. Options that write a file
//! (`tree -o PATH`, `info -o PATH`, `shuf -o PATH`) are classified by where they write,
//! like a redirection.
//!
//! Each row: the program names, the short options, the long options.
//! * short options are letters; `x:` takes a value (`-x VALUE` or `-xVALUE`); `#` allows
//!   numeric options (`head -20`); `*` alone means any argument is fine (shell built-ins and
//!   expression evaluators whose "options" are operators: `test -f x`, `set -e`).
//! * long options are space separated; `name=` takes a value (`--name=V` or `--name V`).
//!   Only exact names count: `--rec` is not `--recursive` here.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::analyzer::{Context, Worst, safe, write_target};
use super::options::{self, OptionSpec};
use super::syntax::Word;
use crate::danger_policy::{Classification, DangerClass};

const ANY: &str = "*";

/// `grep`'s options, shared by its variants.
const GREP_SHORT: &str = "EFGPe:f:iyvwxcm:oqsbHhnTZzA:B:C:aIrRUd:D:L#l";
const GREP_LONG: &str = "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= \
    ignore-case no-ignore-case invert-match word-regexp line-regexp count color color= colour \
    colour= files-without-match files-with-matches max-count= only-matching quiet silent \
    no-messages byte-offset with-filename no-filename label= line-number initial-tab null \
    null-data after-context= before-context= context= text binary-files= devices= directories= \
    exclude= exclude-from= exclude-dir= include= recursive dereference-recursive line-buffered \
    binary help version";

const LS_SHORT: &str = "1aAbBcCdDfFgGhHiI:klLmnNopqQrRsStT:uUvw:xXZ";
const LS_LONG: &str = "all almost-all author escape block-size= ignore-backups color color= \
    classify classify= file-type format= full-time group-directories-first no-group \
    human-readable si dereference-command-line dereference-command-line-symlink-to-dir hide= \
    hyperlink hyperlink= indicator-style= inode ignore= kibibytes dereference numeric-uid-gid \
    literal hide-control-chars show-control-chars quote-name quoting-style= reverse recursive \
    size sort= time= time-style= tabsize= width= context zero help version";

const DIFF_SHORT: &str = "abBdEiNpqrsStTuwyC:D:F:I:L:S:U:W:x:X:#";
const DIFF_LONG: &str = "brief report-identical-files context context= unified unified= ed \
    normal side-by-side width= left-column suppress-common-lines show-c-function \
    show-function-line= label= expand-tabs initial-tab ignore-case ignore-tab-expansion \
    ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines \
    ignore-matching-lines= text strip-trailing-cr recursive no-dereference new-file \
    unidirectional-new-file exclude= exclude-from= starting-file= from-file= to-file= minimal \
    horizon-lines= speed-large-files color color= palette= suppress-blank-empty tabsize= help \
    version";

const CHECKSUM_SHORT: &str = "bctwzl:";
const CHECKSUM_LONG: &str =
    "binary check tag text zero ignore-missing quiet status strict warn length= help version";

/// The table. Programs without options worth listing have empty strings: any option asks.
const SAFE_PROGRAMS: &[(&str, &str, &str)] = &[
    ("ls dir vdir", LS_SHORT, LS_LONG),
    (
        "cat",
        "AbeEnstTuv",
        "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting help version",
    ),
    ("tac", "brs:", "before regex separator= help version"),
    (
        "head",
        "c:n:qvz#",
        "bytes= lines= quiet silent verbose zero-terminated help version",
    ),
    (
        "tail",
        "c:fFn:qs:vz#",
        "bytes= follow follow= lines= max-unchanged-stats= pid= quiet silent retry sleep-interval= verbose zero-terminated help version",
    ),
    (
        "wc",
        "clmwL",
        "bytes chars lines max-line-length words total= files0-from= help version",
    ),
    // They print their arguments, options included (`echo -rf` prints `-rf`).
    ("echo printf", ANY, ""),
    ("pwd", "LP", ""),
    ("grep egrep fgrep zgrep", GREP_SHORT, GREP_LONG),
    (
        "rg",
        "A:B:C:ce:f:g:iIjlLm:M:nNoOpqr:sSt:T:uUvwxz0aE:Hd:j:",
        "after-context= before-context= context= count count-matches case-sensitive ignore-case smart-case color= colors= column no-column context-separator= crlf no-crlf dfa-size-limit= encoding= engine= field-context-separator= field-match-separator= files files-with-matches files-without-match fixed-strings follow glob= iglob= glob-case-insensitive heading no-heading hidden no-hidden ignore-file= invert-match json line-buffered line-number no-line-number line-regexp max-columns= max-columns-preview max-count= max-depth= max-filesize= multiline multiline-dotall no-config no-ignore no-ignore-dot no-ignore-exclude no-ignore-files no-ignore-global no-ignore-parent no-ignore-vcs no-messages no-require-git null null-data one-file-system only-matching passthru pcre2 quiet regexp= replace= search-zip sort= sortr= stats text threads= trim type= type-not= type-list unrestricted vimgrep with-filename no-filename word-regexp pretty byte-offset binary no-binary help version",
    ),
    (
        "ag",
        "A:B:C:acDfG:g:hiLlm:noprsStuUvwz",
        "ackmate after= before= context= break no-break color no-color column count filename no-filename files-with-matches files-without-matches fixed-strings follow group no-group hidden ignore= ignore-case ignore-dir= literal max-count= multiline no-multiline numbers no-numbers only-matching print-long-lines passthrough silent skip-vcs-ignores smart-case stats search-binary search-zip unrestricted vimgrep word-regexp depth= one-device case-sensitive help version",
    ),
    (
        "ack",
        "A:B:C:cfg:HhiIklLm:nQovwx1sS",
        "after-context= before-context= context= count column no-column color nocolor noenv files-with-matches files-without-matches follow nofollow group nogroup heading noheading ignore-case ignore-dir= noignore-dir= invert-match literal match= max-count= no-filename smart-case sort-files type= word-regexp with-filename help version",
    ),
    (
        "cut",
        "b:c:d:f:nsz",
        "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= zero-terminated help version",
    ),
    (
        "tr",
        "cCdst",
        "complement delete squeeze-repeats truncate-set1 help version",
    ),
    ("diff colordiff", DIFF_SHORT, DIFF_LONG),
    (
        "sdiff",
        "abBdEHiIlstW:w:",
        "text ignore-blank-lines ignore-case ignore-all-space ignore-space-change ignore-tab-expansion ignore-trailing-space ignore-matching-lines= left-column suppress-common-lines strip-trailing-cr expand-tabs tabsize= width= minimal speed-large-files help version",
    ),
    (
        "diff3",
        "aAeEimTxX3L:",
        "text show-all ed easy-only initial-tab merge overlap-only show-overlap label= strip-trailing-cr help version",
    ),
    (
        "cmp",
        "bi:ln:s",
        "print-bytes ignore-initial= verbose bytes= quiet silent help version",
    ),
    (
        "comm",
        "123z",
        "check-order nocheck-order output-delimiter= total zero-terminated help version",
    ),
    (
        "stat",
        "Lfc:t",
        "dereference file-system format= printf= terse cached= help version",
    ),
    (
        "file",
        "bcEhiklLNnprsSvzZ0e:F:f:m:P:",
        "brief mime mime-type mime-encoding dereference no-dereference keep-going list raw special-files uncompress uncompress-noreport files-from= separator= magic-file= exclude= extension apple print0 no-pad no-buffer preserve-date help version",
    ),
    ("which", "as", "all skip-alias skip-functions help version"),
    ("whereis", "bmsulBMSf", ""),
    (
        "whoami logname users arch tsort rev yes",
        "",
        "help version",
    ),
    (
        "id",
        "agGnruzZ",
        "context group groups name real user zero help version",
    ),
    ("groups", "", "help version"),
    (
        "who",
        "abdHlmpqrsTtuw",
        "all boot dead heading login lookup mesg message process count runlevel short time users writable help version",
    ),
    (
        "w",
        "hisuf",
        "no-header short from ip-addr no-current old-style help version",
    ),
    (
        "last",
        "adFiRwxf:n:s:t:#",
        "system time-format= since= until= fullnames ip dns nohostname limit= help version",
    ),
    (
        "uname",
        "asnrvmpio",
        "all kernel-name nodename kernel-release kernel-version machine processor hardware-platform operating-system help version",
    ),
    (
        "true false test [ [[ ]] : expr let set unset shift read exit return break continue alias unalias ulimit umask hash getopts times fg bg disown jobs wait cd pushd popd dirs for select case in type",
        ANY,
        "",
    ),
    (
        "du",
        "0abcDhHkLlmPSsxB:d:t:X:",
        "null all apparent-size block-size= bytes total dereference-args human-readable inodes dereference count-links max-depth= no-dereference separate-dirs si summarize threshold= time time= time-style= exclude-from= exclude= one-file-system files0-from= help version",
    ),
    (
        "df",
        "ahHiklPTxB:t:x:",
        "all block-size= human-readable si inodes local no-sync sync output output= portability print-type type= exclude-type= total help version",
    ),
    ("basename", "as:z", "multiple suffix= zero help version"),
    ("dirname", "z", "zero help version"),
    (
        "realpath",
        "eLmPqsz",
        "canonicalize-existing canonicalize-missing logical physical quiet relative-to= relative-base= strip no-symlinks zero help version",
    ),
    (
        "readlink",
        "femnqsvz",
        "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero help version",
    ),
    (
        "tree",
        "adlfxL:iP:I:psughDFqNQrtvUcCnJX",
        "noreport charset= filelimit= timefmt= si du prune sort= dirsfirst filesfirst matchdirs ignore-case gitignore info inodes device fromfile help version",
    ),
    (
        "jq",
        "nrjacsSCMeL:f:",
        "null-input raw-input slurp compact-output raw-output raw-output0 join-output ascii-output sort-keys color-output monochrome-output tab indent= unbuffered stream stream-errors seq exit-status arg= argjson= slurpfile= rawfile= args jsonargs from-file= help version",
    ),
    (
        "od",
        "bcdfiloxsvA:j:N:S:t:w:",
        "address-radix= skip-bytes= read-bytes= strings format= output-duplicates width= traditional endian= help version",
    ),
    (
        "hexdump hd",
        "bcCdoxvn:s:e:f:L",
        "canonical length= skip= format= format-file= color color= no-squeezing one-byte-octal one-byte-char one-byte-hex two-bytes-decimal two-bytes-octal two-bytes-hex help version",
    ),
    (
        "sha1sum sha224sum sha256sum sha384sum sha512sum md5sum b2sum",
        CHECKSUM_SHORT,
        CHECKSUM_LONG,
    ),
    ("md5", "nqrs:", ""),
    (
        "shasum",
        "a:bcpt0U",
        "algorithm= binary check text portable UNIVERSAL 01 status quiet warn strict tag ignore-missing help version",
    ),
    (
        "cksum sum",
        "rsa:l:",
        "algorithm= base64 check length= raw tag untagged zero debug sysv help version",
    ),
    ("sleep", "", "help version"),
    (
        "seq",
        "f:s:w#",
        "format= separator= equal-width help version",
    ),
    (
        "ps",
        "AacdefFHjlLmMNTrSvwxXyZC:G:g:o:O:p:q:s:t:u:U:",
        "cols= columns= cumulative deselect forest format= headers no-headers lines= pid= ppid= quick-pid= rows= sid= sort= tty= user= User= width= group= Group= context help version",
    ),
    (
        "pstree",
        "aAcGhlpsStuUnNZH:",
        "arguments ascii compact-not color= vt100 highlight-all highlight-pid= long numeric-sort show-pids show-parents ns-changes thread-names hide-threads uid-changes unicode ns-sort= security-context help version",
    ),
    (
        "pgrep",
        "lacdfiInorvwxFAg:G:P:s:t:u:U:",
        "list-name list-full count delimiter= full group= ignore-case newest oldest parent= pidfile= session= terminal= euid= uid= exact inverse lightweight ns= nslist= signal= help version",
    ),
    ("pidof", "sxcqwzo:", ""),
    ("top", "bcHiSEed:n:p:u:U:o:O:w:", ""),
    (
        "htop",
        "CHMtd:p:s:u:U:",
        "no-color no-mouse tree delay= pid= sort-key= user= help version",
    ),
    ("uptime", "ps", "pretty since help version"),
    (
        "free",
        "bkmgthlwtsc:",
        "bytes kilo mega giga tera peta kibi mebi gibi tebi pebi human lohi total seconds= count= wide si help version",
    ),
    (
        "vmstat",
        "afmnsdDpStwSuc:#",
        "active forkssum disk disk-sum partition= slabs stats timestamp wide unit= help version",
    ),
    ("iostat", "cdhkmNpstxyzj:o:#", ""),
    ("nproc", "", "all ignore= help version"),
    (
        "lscpu",
        "aebcpxyJ",
        "all extended bytes caches parse hex physical json online offline output-all help version",
    ),
    (
        "lsblk",
        "abdDfimnOpPlrsStJzo:e:I:x:",
        "all bytes nodeps discard fs ascii perms noheadings output= output-all paths pairs list raw inverse topology scsi tree json sort= exclude= include= help version",
    ),
    ("lsusb", "vtd:s:", "verbose tree help version"),
    ("lspci", "mtvkxnbDPs:d:i:p:A:", ""),
    ("lsmod", "", "help version"),
    ("blkid", "dghilLposkSuUnO:t:", ""),
    (
        "findmnt",
        "AabcDdefFiklmnNOoPrRsStTuUvwxyJM:",
        "all ascii bytes canonicalize df evaluate first-only invert kernel list mountpoint= noheadings notruncate output= output-all pairs raw real pseudo shadow source= target= tree types= uniq verify json help version",
    ),
    (
        "nl",
        "b:d:f:h:i:l:n:ps:v:w:",
        "body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment= join-blank-lines= number-format= no-renumber number-separator= starting-line-number= number-width= help version",
    ),
    (
        "column",
        "c:ents:tx:o:R:N:JLl:H:W:r:T:dE:",
        "columns= table separator= output-separator= table-columns= json fillrows help version",
    ),
    ("fold", "bsw:", "bytes spaces width= help version"),
    (
        "fmt",
        "cptsuw:g:#",
        "crown-margin prefix= tagged-paragraph split-only uniform-spacing width= goal= help version",
    ),
    (
        "paste",
        "d:sz",
        "delimiters= serial zero-terminated help version",
    ),
    (
        "join",
        "a:e:io:t:v:1:2:z",
        "ignore-case check-order nocheck-order header zero-terminated help version",
    ),
    ("expand", "it:", "initial tabs= help version"),
    ("unexpand", "at:", "all first-only tabs= help version"),
    (
        "strings",
        "adfwn:t:e:oT:#",
        "all data print-file-name bytes= radix= encoding= include-all-whitespace output-separator= help version",
    ),
    (
        "base64 base32",
        "diw:",
        "decode ignore-garbage wrap= help version",
    ),
    (
        "basenc",
        "diw:",
        "base64 base64url base32 base32hex base16 base2msbf base2lsbf z85 decode ignore-garbage wrap= help version",
    ),
    (
        "less",
        "FRSXNnMmeEiIJgKqQrsuUwWx:b:h:j:p:P:y:z:#",
        "quit-if-one-screen RAW-CONTROL-CHARS chop-long-lines no-init LINE-NUMBERS line-numbers help version",
    ),
    (
        "more",
        "dlfpcsun:#",
        "silent logical no-pause print-over clean-print squeeze plain lines= help version",
    ),
    ("most", "", ""),
    (
        "info",
        "d:f:n:kwa",
        "apropos= directory= file= index-search= node= show-options where all help version",
    ),
    (
        "apropos whatis",
        "dervwlsaM:m:L:C:",
        "debug exact regex wildcard long sections= section= and systems= manpath= locale= config-file= help version",
    ),
    ("printenv", "0", "null help version"),
    (
        "locale",
        "akmcv",
        "all-locales charmaps category-name keyword-name verbose help version",
    ),
    ("getconf", "av:", ""),
    (
        "getent",
        "Nis:",
        "no-idn no-addrconfig service= help version",
    ),
    ("tty", "s", "silent quiet help version"),
    ("tput", "SVxT:", ""),
    ("clear", "xVT:", ""),
    (
        "bc",
        "hilqsvw",
        "help interactive mathlib quiet standard version warn",
    ),
    ("factor", "h", "exponents help version"),
    (
        "numfmt",
        "d:z",
        "from= from-unit= to= to-unit= format= grouping padding= round= suffix= field= delimiter= header header= invalid= zero-terminated debug help version",
    ),
    (
        "shuf",
        "ei:n:rz",
        "echo input-range= head-count= random-source= repeat zero-terminated help version",
    ),
    (
        "iconv",
        "f:t:lcs",
        "from-code= to-code= list silent help version",
    ),
    (
        "cal",
        "13jyYmwsh#",
        "one three julian year twelve monday week sunday help version",
    ),
    ("look", "dfat:", ""),
    (
        "zcat bzcat xzcat",
        "fhlLqrtvT:",
        "force help list license quiet recursive test verbose version",
    ),
    ("zless zmore", "", ""),
    ("lsof", "abhlnNOPRtUvwXxc:d:g:i:p:s:u:k:D:T:F:r:S:", ""),
    (
        "netstat",
        "acCeFghilMnNoprstuvwWxX46",
        "all continuous extend fib groups interfaces listening masquerade numeric program route statistics tcp udp raw unix verbose wide help version",
    ),
    (
        "ss",
        "HnraloempisZzNbE046xutwSdOQf:A:D:F:",
        "no-header numeric resolve all listening options extended memory processes info tos cgroup summary events context contexts net= bpf ipv4 ipv6 packet tcp udp dccp raw unix sctp vsock xdp family= query= socket= diag= filter= oneline help version",
    ),
    (
        "dmesg",
        "dehHkLPrStTuwWxF:f:l:s:",
        "human ctime decode follow follow-new color color= level= facility= notime kernel userspace raw time-format= since= until= json nopager show-delta reltime help version",
    ),
    (
        "journalctl",
        "abefhkmNqrxo:n:p:u:t:S:U:b:D:M:F:g:#",
        "all boot boot= catalog dmesg follow lines= no-pager no-hostname output= priority= reverse since= until= unit= user-unit= identifier= grep= case-sensitive= pager-end quiet utc list-boots system user directory= file= field= fields disk-usage header merge cursor= after-cursor= show-cursor output-fields= facility= help version",
    ),
    ("history", "c#", ""),
    (
        "bat batcat",
        "ApPnlH:r:m:L",
        "show-all plain language= highlight-line= file-name= diff diff-context= tabs= wrap= chop-long-lines terminal-width= number color= italic-text= decorations= force-colorization paging= map-syntax= theme= list-themes list-languages style= line-range= unbuffered help version",
    ),
    (
        "eza exa",
        "1lahTRrdDfFgGHimMnSsuUXL:I:",
        "long all tree recurse level= git icons color= colour= header group-directories-first only-dirs only-files sort= reverse ignore-glob= git-ignore time= modified accessed created changed time-style= no-permissions no-filesize no-user no-time binary bytes group inode links octal-permissions classify oneline grid across help version",
    ),
    (
        "uuidgen",
        "rtxC:N:n:m:s",
        "random time hex count= namespace= name= md5 sha1 help version",
    ),
    ("stty", "ag", "all save help version"),
    ("sync", "df", "data file-system help version"),
    (
        "xmllint",
        "",
        "noout format xpath= valid dtdvalid= schema= relaxng= encode= html xmlout nonet noblanks recover nowarning quiet pretty= c14n noent version",
    ),
    ("diffstat", "bcCefklmnpqrsStuvVwD:o:#", ""),
    ("pr", "acdFfhlmnNorstTvwWD:e:i:l:n:N:o:s:S:w:W:#", ""),
    (
        "apt-cache",
        "fginq",
        "names-only full installed recurse no-all-versions help version",
    ),
    (
        "apt-file",
        "xilF",
        "regexp ignore-case package-only fixed-string help version",
    ),
    (
        "dpkg-query",
        "lLsSWpf:",
        "showformat= list listfiles status search show print-avail load-avail admindir= help version",
    ),
    ("lsattr", "RVadlpv", ""),
    (
        "getfacl",
        "aceEsRLPtpnd",
        "access omit-header all-effective no-effective skip-base recursive logical physical tabular numeric absolute-names default help version",
    ),
    (
        "namei",
        "xmolnv",
        "mountpoints modes owners long nosymlinks vertical help version",
    ),
    ("pathchk", "pP", "portability help version"),
    (
        "logger",
        "ist:p:n:P:u:",
        "id stderr tag= priority= server= port= socket= skip-empty help version",
    ),
];

/// Options that write a file: the value is classified as a write target. (program, short
/// option or ' ', long option or "")
const WRITE_OPTIONS: &[(&str, char, &str)] = &[
    ("tree", 'o', ""),
    ("info", 'o', "output"),
    ("shuf", 'o', "output"),
    ("iconv", 'o', "output"),
    ("sdiff", 'o', "output"),
    ("xmllint", ' ', "output"),
    ("less", 'o', "log-file"),
    ("less", 'O', "LOG-FILE"),
];

/// One program's accepted options, parsed from its table row.
struct Options {
    any: bool,
    short: String,
    short_values: String,
    numeric: bool,
    long: Vec<&'static str>,
    long_values: Vec<&'static str>,
    /// The options of [`WRITE_OPTIONS`] for this program (also in the `*_values` lists).
    writes_short: String,
    writes_long: Vec<&'static str>,
}

/// One option as given on a command line.
#[derive(Clone, Copy)]
enum Flag<'a> {
    Short(char),
    Long(&'a str),
}

impl std::fmt::Display for Flag<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Flag::Short(letter) => write!(f, "-{letter}"),
            Flag::Long(name) => write!(f, "--{name}"),
        }
    }
}

impl Options {
    fn knows(&self, flag: Flag) -> bool {
        match flag {
            Flag::Short(letter) => {
                self.short.contains(letter)
                    || self.short_values.contains(letter)
                    || (self.numeric && letter.is_ascii_digit())
            }
            Flag::Long(name) => self.long.contains(&name) || self.long_values.contains(&name),
        }
    }

    fn writes(&self, flag: Flag) -> bool {
        match flag {
            Flag::Short(letter) => self.writes_short.contains(letter),
            Flag::Long(name) => self.writes_long.contains(&name),
        }
    }
}

static TABLE: LazyLock<HashMap<&'static str, Options>> = LazyLock::new(|| {
    let mut table = HashMap::new();
    for (names, short, long) in SAFE_PROGRAMS {
        for name in names.split_whitespace() {
            table.insert(name, options_of(name, short, long));
        }
    }
    table
});

fn options_of(name: &str, short: &'static str, long: &'static str) -> Options {
    let mut options = Options {
        any: short == ANY,
        short: String::new(),
        short_values: String::new(),
        numeric: false,
        long: Vec::new(),
        long_values: Vec::new(),
        writes_short: String::new(),
        writes_long: Vec::new(),
    };
    let mut letters = short.chars().peekable();
    while let Some(letter) = letters.next() {
        match letter {
            '#' => options.numeric = true,
            '*' => {}
            _ if letters.next_if_eq(&':').is_some() => options.short_values.push(letter),
            _ => options.short.push(letter),
        }
    }
    for option in long.split_whitespace() {
        match option.strip_suffix('=') {
            Some(name) => options.long_values.push(name),
            None => options.long.push(option),
        }
    }
    for (_, short, long) in WRITE_OPTIONS
        .iter()
        .filter(|(program, _, _)| *program == name)
    {
        if *short != ' ' {
            options.short_values.push(*short);
            options.writes_short.push(*short);
        }
        if !long.is_empty() {
            options.long_values.push(long);
            options.writes_long.push(long);
        }
    }
    options
}

/// The classification of `name` when it is one of the safe programs: safe with known
/// options, the write target's class for an option that writes, `code_execution` for an
/// option nobody listed. `None` when the program is not in the table.
pub(super) fn classify(name: &str, args: &[Word], context: &Context) -> Option<Classification> {
    let options = TABLE.get(name)?;
    if options.any {
        return Some(safe(format!("{name} only reads or prints")));
    }
    let spec = OptionSpec::new(&options.short_values, &options.long_values);
    let line = options::parse(args, spec);
    let shorts = line
        .shorts
        .iter()
        .map(|(letter, value)| (Flag::Short(*letter), value));
    let longs = line
        .longs
        .iter()
        .map(|(name, value)| (Flag::Long(name), value));
    let mut result = Worst::default();
    for (flag, value) in shorts.chain(longs) {
        if !options.knows(flag) {
            return Some(unknown_option(name, flag));
        }
        if let Some(target) = value.as_ref().filter(|_| options.writes(flag)) {
            result.add(write_target(target, context));
        }
    }
    Some(result.or_safe(&format!("{name} only reads or prints")))
}

fn unknown_option(name: &str, option: Flag) -> Classification {
    Classification::new(
        DangerClass::CodeExecution,
        format!("{name} with {option}, an option odek does not know to be safe"),
    )
}

/// Every program in the table, for tests.
#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    TABLE.keys().copied().collect()
}
