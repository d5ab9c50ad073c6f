//! The rules for programs that talk to the network.

use super::analyzer::{Analyzer, Context, write_target};
use super::options::{self, OptionSpec};
use super::syntax::Word;
use crate::danger_policy::classified;
use crate::danger_policy::{Classification, DangerClass};

/// Programs that only look things up on the network.
const LOOKUPS: &[&str] = &[
    "ping",
    "ping6",
    "dig",
    "nslookup",
    "host",
    "traceroute",
    "traceroute6",
    "tracepath",
    "mtr",
    "whois",
    "nmap",
];

/// Programs that open raw connections or copy files to other hosts.
const RAW_CONNECTIONS: &[&str] = &["telnet", "ftp", "lftp", "tftp", "sftp"];

const UPLOAD_METHODS: &[&str] = &["POST", "PUT", "PATCH", "DELETE"];

impl Analyzer {
    /// curl, wget, ssh, rsync and friends.
    pub(super) fn network_program(
        &mut self,
        name: &str,
        args: &[Word],
        context: &Context,
    ) -> Option<Classification> {
        let found = match name {
            "curl" => curl(args, context),
            "wget" => wget(args, context),
            "http" | "https" | "xh" | "xhs" => httpie(name, args, context),
            "ssh" => ssh(args),
            "scp" => scp(args),
            "rsync" => self.rsync(args, context),
            "nc" | "ncat" | "netcat" => netcat(name, args),
            "socat" => socat(args),
            "openssl" => openssl(args, context),
            _ if LOOKUPS.contains(&name) => classified(
                DangerClass::NetworkEgress,
                format!("{name} contacts other hosts"),
            ),
            _ if RAW_CONNECTIONS.contains(&name) => classified(
                DangerClass::NetworkUpload,
                format!("{name} opens a connection that can send data"),
            ),
            _ => return None,
        };
        Some(found)
    }

    fn rsync(&mut self, args: &[Word], context: &Context) -> Classification {
        let line = options::parse(
            args,
            OptionSpec::new("eBfTM", &["rsh", "filter", "temp-dir", "remote-option"]),
        );
        let mut result = classified(DangerClass::LocalWrite, "rsync copies files");
        for shell in line.values('e', "rsh") {
            result = result.worse(self.script(&shell.text, context.depth + 1, context.cwd, &[]));
        }
        let remote = line
            .operands
            .iter()
            .any(|operand| is_remote_path(&operand.text));
        if remote {
            return result.worse(classified(
                DangerClass::NetworkUpload,
                "rsync copies files to or from another host",
            ));
        }
        if line.has_long_prefix("delete") || line.has_long("remove-source-files") {
            result = result.worse(classified(
                DangerClass::Destructive,
                "rsync --delete removes files",
            ));
        }
        match line.operands.split_last() {
            Some((destination, sources)) if !sources.is_empty() => {
                result.worse(write_target(destination, context))
            }
            _ => result,
        }
    }
}

/// `host:path`, `user@host:path` or `rsync://…`.
fn is_remote_path(text: &str) -> bool {
    if text.contains("://") {
        return true;
    }
    match text.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

fn curl(args: &[Word], context: &Context) -> Classification {
    let spec = OptionSpec::new(
        "AbcCdDeEFHKmoPQrTtuUwxXYyz",
        &[
            "data",
            "data-raw",
            "data-binary",
            "data-ascii",
            "data-urlencode",
            "form",
            "form-string",
            "json",
            "upload-file",
            "request",
            "output",
            "config",
            "cookie-jar",
            "dump-header",
            "trace",
            "trace-ascii",
            "libcurl",
            "etag-save",
            "url",
            "header",
            "user",
            "user-agent",
            "referer",
            "cookie",
            "proxy",
            "max-time",
            "connect-timeout",
            "retry",
            "output-dir",
            "write-out",
            "cacert",
            "cert",
            "key",
            "resolve",
            "range",
        ],
    );
    let line = options::parse(args, spec);
    let mut result = classified(
        DangerClass::NetworkEgress,
        "curl downloads from the network",
    );
    let sends_body = ['d', 'F', 'T'].iter().any(|flag| line.has_short(*flag))
        || ["data", "form", "json", "upload-file"]
            .iter()
            .any(|long| line.has_long_prefix(long));
    let upload_method = line
        .values('X', "request")
        .any(|method| UPLOAD_METHODS.contains(&method.text.to_ascii_uppercase().as_str()));
    if sends_body || upload_method {
        result = result.worse(classified(
            DangerClass::NetworkUpload,
            "curl sends data (-d/-F/-T or -X POST/PUT)",
        ));
    }
    if line.has('K', "config") {
        result = result.worse(classified(
            DangerClass::NetworkUpload,
            "curl reads options from a config file",
        ));
    }
    if line.has('O', "remote-name") || line.has_long("remote-name-all") {
        result = result.worse(classified(DangerClass::LocalWrite, "curl -O saves a file"));
    }
    let written = line
        .values('o', "output")
        .chain(line.values('D', "dump-header"))
        .chain(line.values('c', "cookie-jar"))
        .chain(line.values(' ', "trace"))
        .chain(line.values(' ', "trace-ascii"))
        .chain(line.values(' ', "libcurl"))
        .chain(line.values(' ', "etag-save"));
    for target in written.filter(|target| target.text != "-") {
        result = result.worse(write_target(target, context));
    }
    result
}

fn wget(args: &[Word], context: &Context) -> Classification {
    let spec = OptionSpec::new(
        "OoaPieUtTwQlARDIXB",
        &[
            "output-document",
            "output-file",
            "append-output",
            "directory-prefix",
            "input-file",
            "execute",
            "user-agent",
            "post-data",
            "post-file",
            "body-data",
            "body-file",
            "method",
        ],
    );
    let line = options::parse(args, spec);
    let mut result = classified(
        DangerClass::NetworkEgress,
        "wget downloads from the network",
    );
    let sends = ["post-data", "post-file", "body-data", "body-file"]
        .iter()
        .any(|long| line.has_long(long))
        || line
            .values(' ', "method")
            .any(|method| UPLOAD_METHODS.contains(&method.text.to_ascii_uppercase().as_str()));
    if sends {
        result = result.worse(classified(DangerClass::NetworkUpload, "wget sends data"));
    }
    let documents: Vec<&Word> = line.values('O', "output-document").collect();
    if documents.is_empty() && !line.has_long("spider") {
        result = result.worse(classified(
            DangerClass::LocalWrite,
            "wget saves files in the working directory",
        ));
    }
    let written = documents
        .into_iter()
        .chain(line.values('P', "directory-prefix"))
        .chain(line.values('o', "output-file"))
        .chain(line.values('a', "append-output"));
    for target in written.filter(|target| target.text != "-") {
        result = result.worse(write_target(target, context));
    }
    result
}

/// HTTPie and xh: `http POST url key=value`.
fn httpie(name: &str, args: &[Word], context: &Context) -> Classification {
    let line = options::parse(args, OptionSpec::new("oa", &["output", "auth"]));
    let mut operands = line.operands.iter().map(|w| w.text.as_str());
    let first = operands.next().unwrap_or("");
    let method_given = first.chars().all(|c| c.is_ascii_uppercase()) && !first.is_empty();
    let items: Vec<&str> = if method_given {
        operands.skip(1).collect()
    } else {
        operands.collect()
    };
    let sends = (method_given && UPLOAD_METHODS.contains(&first))
        || line.has('f', "form")
        || items
            .iter()
            .any(|item| item.contains('=') || item.contains('@'));
    let mut result = if sends {
        classified(DangerClass::NetworkUpload, format!("{name} sends data"))
    } else {
        classified(
            DangerClass::NetworkEgress,
            format!("{name} downloads from the network"),
        )
    };
    if line.has('d', "download") {
        result = result.worse(classified(
            DangerClass::LocalWrite,
            format!("{name} saves a file"),
        ));
    }
    for target in line.values('o', "output") {
        result = result.worse(write_target(target, context));
    }
    result
}

fn runs_local_command(options_given: &[&Word]) -> bool {
    options_given.iter().any(|option| {
        let lower = option.text.to_ascii_lowercase();
        lower.contains("proxycommand") || lower.contains("localcommand")
    })
}

fn ssh(args: &[Word]) -> Classification {
    let line = options::parse(args, OptionSpec::new("BbcDEeFIiJLlmOoPpQRSWw", &[]));
    let given: Vec<&Word> = line.values('o', "").collect();
    if runs_local_command(&given) {
        return classified(
            DangerClass::CodeExecution,
            "ssh -o ProxyCommand runs a local command",
        );
    }
    if line.operands.len() > 1 {
        return classified(
            DangerClass::NetworkUpload,
            "ssh runs a command on another host",
        );
    }
    classified(DangerClass::NetworkEgress, "ssh connects to another host")
}

fn scp(args: &[Word]) -> Classification {
    let line = options::parse(args, OptionSpec::new("cDFiJlPoSX", &[]));
    let given: Vec<&Word> = line.values('o', "").collect();
    if runs_local_command(&given) || line.has_short('S') {
        return classified(DangerClass::CodeExecution, "scp runs a local command");
    }
    classified(
        DangerClass::NetworkUpload,
        "scp copies files over the network",
    )
}

fn netcat(name: &str, args: &[Word]) -> Classification {
    let executes = args.iter().any(|word| {
        matches!(
            word.text.as_str(),
            "-e" | "-c" | "--exec" | "--sh-exec" | "--lua-exec"
        )
    });
    if executes {
        return classified(
            DangerClass::CodeExecution,
            format!("{name} -e connects a shell to the network"),
        );
    }
    classified(
        DangerClass::NetworkUpload,
        format!("{name} opens a raw network connection"),
    )
}

fn socat(args: &[Word]) -> Classification {
    let executes = args.iter().any(|word| {
        let lower = word.text.to_ascii_lowercase();
        lower.starts_with("exec:") || lower.starts_with("system:")
    });
    if executes {
        return classified(DangerClass::CodeExecution, "socat runs a command");
    }
    classified(
        DangerClass::NetworkUpload,
        "socat opens a network connection",
    )
}

fn openssl(args: &[Word], context: &Context) -> Classification {
    let connects = args.first().is_some_and(|sub| {
        matches!(
            sub.text.as_str(),
            "s_client" | "s_server" | "s_time" | "ocsp"
        )
    });
    let mut result = if connects {
        classified(
            DangerClass::NetworkEgress,
            "openssl connects to another host",
        )
    } else {
        classified(DangerClass::Safe, "openssl only computes")
    };
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word.text == "-out"
            && let Some(target) = words.next()
        {
            result = result.worse(write_target(target, context));
        }
    }
    result
}
