//! The rules for programs that manage the system: services, users, processes, networking
//! setup, scheduling and power.

use super::analyzer::safe;
use super::syntax::Word;
use crate::danger_policy::classified;
use crate::danger_policy::{Classification, DangerClass};

/// Programs that always change system state.
const SYSTEM_CHANGERS: &[&str] = &[
    "umount",
    "pkill",
    "killall",
    "useradd",
    "usermod",
    "userdel",
    "groupadd",
    "groupdel",
    "groupmod",
    "adduser",
    "deluser",
    "passwd",
    "chpasswd",
    "chsh",
    "chfn",
    "visudo",
    "iptables",
    "ip6tables",
    "nft",
    "ufw",
    "firewall-cmd",
    "modprobe",
    "insmod",
    "rmmod",
    "setcap",
    "chattr",
    "ldconfig",
    "update-alternatives",
    "swapon",
    "swapoff",
    "mknod",
    "losetup",
    "renice",
    "atrm",
    "scutil",
    "networksetup",
    "pmset",
    "csrutil",
    "spctl",
    "dscl",
    "nvram",
    "kextload",
    "update-grub",
    "grub-install",
    "cryptsetup",
];

/// Programs that make something run automatically later.
const PERSISTENCE_TOOLS: &[&str] = &["at", "batch", "update-rc.d", "chkconfig", "rc-update"];

/// Programs that power the machine off or restart it.
const POWER_TOOLS: &[&str] = &["shutdown", "reboot", "halt", "poweroff", "kexec"];

/// Rules for system administration programs, or `None` when `name` is not one.
pub(super) fn system_program(name: &str, args: &[Word]) -> Option<Classification> {
    let texts: Vec<&str> = args.iter().map(|word| word.text.as_str()).collect();
    let operands: Vec<&str> = texts
        .iter()
        .copied()
        .filter(|text| !text.starts_with('-'))
        .collect();
    let found = match name {
        _ if POWER_TOOLS.contains(&name) => power(name, &texts),
        "init" | "telinit" if !operands.is_empty() => classified(
            DangerClass::Blocked,
            format!("{name} changes the run level (halt or reboot)"),
        ),
        "systemctl" => systemctl(&operands),
        "service" => service(&texts, &operands),
        "launchctl" => launchctl(&operands),
        "crontab" if texts.contains(&"-l") => safe("crontab -l only lists"),
        "crontab" => classified(DangerClass::Persistence, "crontab installs scheduled jobs"),
        "atq" => safe("atq only lists"),
        // The model never upgrades odek: the user runs it (docs/UPGRADE.md).
        "odek" if operands.first() == Some(&"upgrade") => classified(
            DangerClass::Persistence,
            "odek upgrade replaces odek's own binary",
        ),
        _ if PERSISTENCE_TOOLS.contains(&name) => classified(
            DangerClass::Persistence,
            format!("{name} schedules commands to run later"),
        ),
        "kill" => kill(&texts),
        "mount" if operands.is_empty() => safe("mount only lists mounts"),
        "mount" => classified(
            DangerClass::SystemWrite,
            "mount changes mounted file systems",
        ),
        "sysctl" => sysctl(&texts),
        "ip" => network_setup(
            name,
            &operands,
            &[
                "add", "del", "delete", "set", "flush", "change", "replace", "append", "prepend",
                "exec", "up", "down",
            ],
        ),
        "ifconfig" if operands.len() > 1 => classified(
            DangerClass::SystemWrite,
            "ifconfig changes a network interface",
        ),
        "ifconfig" => safe("ifconfig only lists interfaces"),
        "route" => network_setup(
            name,
            &operands,
            &["add", "del", "delete", "change", "flush"],
        ),
        "hostnamectl" | "timedatectl" | "localectl" | "loginctl" => settings_tool(name, &operands),
        "defaults" => match operands.first() {
            Some(&("read" | "read-type" | "domains" | "find" | "export")) => {
                safe("defaults only reads")
            }
            _ => classified(
                DangerClass::SystemWrite,
                "defaults changes system preferences",
            ),
        },
        "diskutil" => diskutil(&operands),
        "date" if texts.iter().any(|t| *t == "-s" || t.starts_with("--set")) => {
            classified(DangerClass::SystemWrite, "date -s sets the system clock")
        }
        "date" => safe("date only prints"),
        "hostname" if !operands.is_empty() => {
            classified(DangerClass::SystemWrite, "hostname sets the host name")
        }
        "hostname" => safe("hostname only prints"),
        "docker" | "podman" => container(name, &texts, &operands),
        "kubectl" | "oc" => kubernetes(name, &operands),
        _ if SYSTEM_CHANGERS.contains(&name) => classified(
            DangerClass::SystemWrite,
            format!("{name} changes system state"),
        ),
        _ => return None,
    };
    Some(found)
}

fn power(name: &str, texts: &[&str]) -> Classification {
    if texts.iter().any(|t| matches!(*t, "--help" | "-c")) {
        return safe(format!("{name} --help or cancel"));
    }
    classified(
        DangerClass::Blocked,
        format!("{name} powers the machine off or restarts it"),
    )
}

fn systemctl(operands: &[&str]) -> Classification {
    let Some(verb) = operands.first() else {
        return safe("systemctl only lists units");
    };
    match *verb {
        "status" | "show" | "cat" | "list-units" | "list-unit-files" | "list-timers"
        | "list-sockets" | "list-dependencies" | "list-jobs" | "is-active" | "is-enabled"
        | "is-failed" | "is-system-running" | "help" | "get-default" | "show-environment" => {
            safe(format!("systemctl {verb} only reads"))
        }
        "enable" | "reenable" | "link" | "edit" | "preset" | "preset-all" | "set-default"
        | "add-wants" | "add-requires" => classified(
            DangerClass::Persistence,
            format!("systemctl {verb} makes a service start automatically"),
        ),
        "poweroff"
        | "reboot"
        | "halt"
        | "kexec"
        | "suspend"
        | "hibernate"
        | "hybrid-sleep"
        | "suspend-then-hibernate"
        | "emergency"
        | "rescue"
        | "soft-reboot" => classified(
            DangerClass::Blocked,
            format!("systemctl {verb} stops or restarts the machine"),
        ),
        _ => classified(
            DangerClass::SystemWrite,
            format!("systemctl {verb} changes services"),
        ),
    }
}

fn service(texts: &[&str], operands: &[&str]) -> Classification {
    if texts.contains(&"--status-all") || operands.get(1) == Some(&"status") {
        return safe("service status only reads");
    }
    classified(
        DangerClass::SystemWrite,
        "service starts or stops a service",
    )
}

fn launchctl(operands: &[&str]) -> Classification {
    match operands.first() {
        None
        | Some(
            &("list" | "print" | "print-disabled" | "blame" | "version" | "help" | "managerpid"
            | "manageruid" | "procinfo" | "hostinfo" | "dumpstate"),
        ) => safe("launchctl only reads"),
        Some(&("load" | "bootstrap" | "enable" | "submit")) => classified(
            DangerClass::Persistence,
            "launchctl makes a job start automatically",
        ),
        Some(_) => classified(DangerClass::SystemWrite, "launchctl changes services"),
    }
}

fn kill(texts: &[&str]) -> Classification {
    if texts.first().is_some_and(|t| matches!(*t, "-l" | "-L")) {
        return safe("kill -l lists signals");
    }
    if texts.last() == Some(&"-1") {
        return classified(DangerClass::Destructive, "kill -1 signals every process");
    }
    classified(DangerClass::SystemWrite, "kill signals processes")
}

fn sysctl(texts: &[&str]) -> Classification {
    let writes = texts
        .iter()
        .any(|t| matches!(*t, "-w" | "-p" | "--write" | "--load" | "--system") || t.contains('='));
    if writes {
        return classified(DangerClass::SystemWrite, "sysctl changes kernel settings");
    }
    safe("sysctl only reads")
}

fn network_setup(name: &str, operands: &[&str], changing_words: &[&str]) -> Classification {
    if operands.iter().any(|word| changing_words.contains(word)) {
        return classified(
            DangerClass::SystemWrite,
            format!("{name} changes network settings"),
        );
    }
    safe(format!("{name} only lists network settings"))
}

fn settings_tool(name: &str, operands: &[&str]) -> Classification {
    match operands.first() {
        None | Some(&("status" | "show" | "list" | "list-sessions" | "list-users")) => {
            safe(format!("{name} only reads"))
        }
        Some(_) => classified(DangerClass::SystemWrite, format!("{name} changes settings")),
    }
}

fn diskutil(operands: &[&str]) -> Classification {
    match operands.first() {
        None | Some(&("list" | "info" | "activity")) => safe("diskutil only reads"),
        Some(
            &("eraseDisk" | "eraseVolume" | "partitionDisk" | "zeroDisk" | "randomDisk"
            | "secureErase" | "reformat"),
        ) => classified(DangerClass::Destructive, "diskutil erases a disk"),
        Some(_) => classified(DangerClass::SystemWrite, "diskutil changes disks"),
    }
}

fn container(name: &str, texts: &[&str], operands: &[&str]) -> Classification {
    let privileged = texts.iter().any(|t| {
        *t == "--privileged"
            || t.starts_with("--pid=host")
            || t.starts_with("/:")
            || t.contains("docker.sock")
    });
    let verbs: Vec<&str> = operands.iter().take(2).copied().collect();
    let verb = |reason: &str| format!("{name} {reason}");
    match verbs.as_slice() {
        []
        | [
            "ps" | "images" | "version" | "info" | "logs" | "inspect" | "stats" | "top" | "events"
            | "port" | "diff" | "history",
            ..,
        ]
        | [
            "image" | "container" | "volume" | "network" | "context" | "system",
            "ls" | "list" | "inspect" | "df" | "info" | "logs" | "history",
        ]
        | ["compose", "ps" | "logs" | "config" | "ls" | "images"] => safe(verb("only reads")),
        ["pull", ..] | ["compose", "pull"] | ["search", ..] => {
            classified(DangerClass::NetworkEgress, verb("downloads images"))
        }
        ["push" | "login", ..] | ["compose", "push"] => {
            classified(DangerClass::NetworkUpload, verb("uploads to a registry"))
        }
        ["rm" | "rmi" | "prune", ..] | [_, "rm" | "prune"] => classified(
            DangerClass::Destructive,
            verb("deletes containers, images or data"),
        ),
        ["stop" | "kill", ..] | ["compose", "down" | "stop" | "kill"] => {
            classified(DangerClass::SystemWrite, verb("stops containers"))
        }
        ["tag" | "commit" | "save" | "load" | "export" | "import", ..] | [_, "create"] => {
            classified(DangerClass::LocalWrite, verb("writes images or volumes"))
        }
        _ if privileged => classified(
            DangerClass::SystemWrite,
            verb("runs a privileged container with host access"),
        ),
        [
            "run" | "exec" | "build" | "buildx" | "compose" | "create" | "start" | "restart"
            | "attach" | "cp",
            ..,
        ] => classified(DangerClass::CodeExecution, verb("runs containers")),
        _ => classified(DangerClass::Unknown, verb("subcommand is not known")),
    }
}

fn kubernetes(name: &str, operands: &[&str]) -> Classification {
    let verbs: Vec<&str> = operands.iter().take(2).copied().collect();
    let verb = |reason: &str| format!("{name} {reason}");
    match verbs.as_slice() {
        []
        | [
            "get" | "describe" | "logs" | "explain" | "version" | "api-resources" | "api-versions"
            | "cluster-info" | "top" | "diff",
            ..,
        ]
        | ["config", "view" | "get-contexts" | "current-context"]
        | ["auth", "can-i"] => safe(verb("only reads")),
        ["delete" | "drain", ..] => classified(DangerClass::Destructive, verb("deletes resources")),
        [
            "exec" | "attach" | "debug" | "port-forward" | "proxy" | "cp",
            ..,
        ] => classified(DangerClass::CodeExecution, verb("runs code in the cluster")),
        [
            "apply" | "create" | "patch" | "edit" | "replace" | "scale" | "autoscale" | "rollout"
            | "set" | "label" | "annotate" | "expose" | "run" | "taint" | "cordon" | "uncordon"
            | "config",
            ..,
        ] => classified(DangerClass::SystemWrite, verb("changes the cluster")),
        _ => classified(DangerClass::Unknown, verb("subcommand is not known")),
    }
}
