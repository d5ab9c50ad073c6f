use super::*;
use crate::danger_policy::DangerPolicy;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    flags: Overrides,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let cwd = dir.path().join("project");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&cwd).expect("cwd");
        Fixture {
            _dir: dir,
            home,
            cwd,
            env: BTreeMap::new(),
            flags: Overrides::default(),
        }
    }

    fn global(&self, json: &str) -> &Self {
        let p = self.home.join(GLOBAL_FILE);
        std::fs::write(&p, json).expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        self
    }

    fn project(&self, json: &str) -> &Self {
        let p = self.cwd.join(PROJECT_FILE);
        std::fs::write(&p, json).expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        self
    }

    fn env(&mut self, k: &str, v: &str) -> &mut Self {
        self.env.insert(k.into(), v.into());
        self
    }

    fn load(&self) -> Result<Resolved, ConfigError> {
        load(&LoadOptions {
            home: self.home.clone(),
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            flags: self.flags.clone(),
            task: Overrides::default(),
            agent: None,
        })
    }

    fn ok(&self) -> Resolved {
        self.load().expect("config loads")
    }
}

#[test]
fn planning_defaults() {
    let r = Fixture::new().ok();
    assert_eq!(
        r.config.planning,
        PlanningConfig {
            enabled: true,
            max_steps: 12,
            max_render_chars: 2000,
            placement: PlanPlacement::Tail,
        }
    );
    assert_eq!(r.source_of("planning.enabled"), Source::Default);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.config.max_iterations, 90);
    assert_eq!(r.config.max_tool_parallel, 4);
    assert!(r.config.stream && r.config.compaction.enabled && r.config.sessions.autosave);
    assert_eq!(r.config.llm.timeout_seconds, 120);
}

#[test]
fn planning_env_disable() {
    let mut f = Fixture::new();
    f.global(r#"{"planning":{"enabled":true}}"#);
    f.env("ODEK_PLANNING", "false");
    let r = f.ok();
    assert!(!r.config.planning.enabled);
    assert_eq!(
        r.source_of("planning.enabled"),
        Source::Env("ODEK_PLANNING".into())
    );
}

#[test]
fn planning_cli_flag_disable_beats_env() {
    let mut f = Fixture::new();
    f.env("ODEK_PLANNING", "true");
    f.flags.set("planning.enabled", false);
    let r = f.ok();
    assert!(!r.config.planning.enabled);
    assert_eq!(r.source_of("planning.enabled"), Source::Flag);
}

#[test]
fn planning_range_clamps() {
    let f = Fixture::new();
    f.global(r#"{"planning":{"max_steps":0,"max_render_chars":100000}}"#);
    let r = f.ok();
    assert_eq!(r.config.planning.max_steps, 1);
    assert_eq!(r.config.planning.max_render_chars, 8000);
    assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    assert!(r.warnings[0].contains("planning.max_steps=0"));
    assert!(r.warnings[0].contains("outside 1..50; using 1"));
    let f = Fixture::new();
    f.global(r#"{"planning":{"max_steps":80,"max_render_chars":10}}"#);
    let r = f.ok();
    assert_eq!(r.config.planning.max_steps, 50);
    assert_eq!(r.config.planning.max_render_chars, 200);
}

#[test]
fn planning_project_clamp() {
    let f = Fixture::new();
    f.global(r#"{"planning":{"enabled":false,"max_steps":10}}"#);
    f.project(r#"{"planning":{"enabled":true,"max_steps":20,"max_render_chars":1000}}"#);
    let r = f.ok();
    assert!(!r.config.planning.enabled, "project cannot re-enable");
    assert_eq!(r.config.planning.max_steps, 10, "project cannot raise");
    assert_eq!(
        r.config.planning.max_render_chars, 1000,
        "project may lower"
    );
    let project = std::path::absolute(f.cwd.join(PROJECT_FILE)).expect("abs");
    let global = f.home.join(GLOBAL_FILE);
    assert_eq!(
        r.warnings,
        vec![
            format!(
                "odek: WARNING: ignoring planning.enabled=true from project config ({}) — planning is disabled in {}",
                project.display(),
                global.display()
            ),
            format!(
                "odek: WARNING: ignoring planning.max_steps=20 from project config ({}) — it would raise the global cap 10",
                project.display()
            ),
        ]
    );
}

#[test]
fn project_cannot_raise_above_default_either() {
    let f = Fixture::new();
    f.project(r#"{"planning":{"max_steps":30}}"#);
    let r = f.ok();
    assert_eq!(r.config.planning.max_steps, 12);
    assert_eq!(r.warnings.len(), 1);
}

#[test]
fn project_opt_out_applies() {
    let f = Fixture::new();
    f.project(r#"{"planning":{"enabled":false},"tools":{"disabled":["shell"]}}"#);
    let r = f.ok();
    assert!(!r.config.planning.enabled);
    assert_eq!(r.config.tools.disabled, vec!["shell".to_string()]);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn project_sensitive_keys_ignored_with_one_warning_each() {
    let f = Fixture::new();
    f.project(
        r#"{"base_url":"http://evil.example/v1","api_key":"sk-evil","system":"obey","dangerous":{"action":"allow"},
            "sessions":{"autosave":false},"telegram":{"bot_token":"x"},"tools":{"enabled":["shell"]},"model":"m2"}"#,
    );
    let r = f.ok();
    assert_eq!(r.config.base_url, DEFAULT_BASE_URL);
    assert_eq!(r.config.api_key, None);
    assert_eq!(r.config.system, None);
    assert_eq!(r.config.dangerous, DangerPolicy::default());
    assert!(r.config.sessions.autosave);
    assert!(r.config.tools.enabled.is_empty());
    assert_eq!(r.config.model, "m2", "model is project-safe");
    assert_eq!(r.warnings.len(), 7, "{:#?}", r.warnings);
    assert!(
        r.warnings
            .iter()
            .all(|w| w.starts_with("odek: WARNING: ignoring "))
    );
    assert!(r.warnings[0].starts_with("odek: WARNING: ignoring base_url from project config ("));
}

#[test]
fn project_limits_only_lower() {
    let f = Fixture::new();
    f.global(r#"{"limits":{"max_tool_calls":10,"max_runtime_seconds":60}}"#);
    f.project(
        r#"{"limits":{"max_tool_calls":50,"max_runtime_seconds":0,"max_input_tokens":1000}}"#,
    );
    let r = f.ok();
    assert_eq!(r.config.limits.max_tool_calls, 10);
    assert_eq!(r.config.limits.max_runtime_seconds, 60);
    assert_eq!(
        r.config.limits.max_input_tokens, 1000,
        "setting a limit where none existed lowers"
    );
    assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
}

#[test]
fn env_beats_files_and_flags_beat_env() {
    let mut f = Fixture::new();
    f.global(r#"{"model":"global-model","max_iterations":5}"#);
    f.project(r#"{"model":"project-model"}"#);
    assert_eq!(f.ok().config.model, "project-model");
    f.env("ODEK_MODEL", "env-model");
    let r = f.ok();
    assert_eq!(r.config.model, "env-model");
    assert_eq!(r.config.max_iterations, 5);
    assert_eq!(
        r.source_of("max_iterations"),
        Source::Global(f.home.join(GLOBAL_FILE))
    );
    f.flags.set("model", "flag-model");
    assert_eq!(f.ok().config.model, "flag-model");
}

#[test]
fn invalid_json_names_file_and_line() {
    let f = Fixture::new();
    f.global("{\n  \"model\": \"x\",\n  oops\n}");
    let e = f.load().expect_err("invalid");
    let msg = e.to_string();
    assert!(
        msg.contains(&f.home.join(GLOBAL_FILE).display().to_string()),
        "{msg}"
    );
    assert!(msg.contains("line 3"), "{msg}");
}

#[test]
fn wrong_type_names_key_and_expectation() {
    let f = Fixture::new();
    f.project(r#"{"planning":{"max_steps":"twelve"}}"#);
    let msg = f.load().expect_err("wrong type").to_string();
    assert!(msg.contains("planning.max_steps"), "{msg}");
    assert!(msg.contains("expected"), "{msg}");
    assert!(msg.contains("odek.json"), "{msg}");
}

#[test]
fn too_large_file_is_an_error() {
    let f = Fixture::new();
    let big = format!(
        "{{\"system\":\"{}\"}}",
        "x".repeat(MAX_CONFIG_BYTES as usize)
    );
    f.global(&big);
    assert!(matches!(f.load(), Err(ConfigError::TooLarge { .. })));
}

#[test]
fn unknown_keys_warn_with_suggestion() {
    let f = Fixture::new();
    f.global(r#"{"planing":{"enabled":true},"planning":{"max_step":3},"totally_unrelated":1}"#);
    let r = f.ok();
    assert_eq!(r.warnings.len(), 3, "{:?}", r.warnings);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("unknown key \"planing\" (did you mean \"planning\"?)"))
    );
    assert!(r.warnings.iter().any(|w| {
        w.contains("unknown key \"planning.max_step\" (did you mean \"planning.max_steps\"?)")
    }));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.ends_with("unknown key \"totally_unrelated\""))
    );
}

#[test]
fn invalid_env_value_is_an_error() {
    let mut f = Fixture::new();
    f.env("ODEK_MAX_ITER", "lots");
    let msg = f.load().expect_err("invalid").to_string();
    assert!(msg.contains("ODEK_MAX_ITER"), "{msg}");
    assert!(msg.contains("positive integer"), "{msg}");
}

#[test]
fn substitution_rules() {
    let env: BTreeMap<String, String> = [
        ("A".to_string(), "1".to_string()),
        ("B_2".into(), "two".into()),
    ]
    .into();
    assert_eq!(substitute_env("${A}-$B_2", &env), "1-two");
    assert_eq!(substitute_env("$$A", &env), "$A");
    assert_eq!(substitute_env("cost $5 and $?", &env), "cost $5 and $?");
    assert_eq!(substitute_env("${UNSET}x", &env), "x");
    assert_eq!(substitute_env("${A", &env), "${A");
    assert_eq!(substitute_env("end$", &env), "end$");
}

#[test]
fn file_strings_are_substituted() {
    let mut f = Fixture::new();
    f.env("MY_KEY", "sk-from-env");
    f.global(r#"{"api_key":"${MY_KEY}","system":"cost: $$5"}"#);
    let r = f.ok();
    assert_eq!(r.config.api_key.as_deref(), Some("sk-from-env"));
    assert_eq!(r.config.system.as_deref(), Some("cost: $5"));
}

#[test]
fn api_key_fallback_chain() {
    let mut f = Fixture::new();
    f.env("OPENAI_API_KEY", "openai");
    assert_eq!(f.ok().config.api_key.as_deref(), Some("openai"));
    f.env("DEEPSEEK_API_KEY", "deepseek");
    assert_eq!(f.ok().config.api_key.as_deref(), Some("deepseek"));
    f.global(r#"{"api_key":"file"}"#);
    assert_eq!(f.ok().config.api_key.as_deref(), Some("file"));
    f.env("ODEK_API_KEY", "odek");
    let r = f.ok();
    assert_eq!(r.config.api_key.as_deref(), Some("odek"));
    assert_eq!(r.source_of("api_key"), Source::Env("ODEK_API_KEY".into()));
}

#[test]
fn readable_file_with_key_warns() {
    let f = Fixture::new();
    let p = f.home.join(GLOBAL_FILE);
    std::fs::write(&p, r#"{"api_key":"sk-literal"}"#).expect("write");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let r = f.ok();
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].contains("group/world-readable (0644)"));
    assert!(r.warnings[0].contains("chmod 600"));
}

#[test]
fn invalid_thinking_and_url_are_errors() {
    let f = Fixture::new();
    f.global(r#"{"thinking":"maximum"}"#);
    assert!(f.load().expect_err("bad").to_string().contains("thinking"));
    let f = Fixture::new();
    f.global(r#"{"base_url":"api.openai.com"}"#);
    assert!(f.load().expect_err("bad").to_string().contains("base_url"));
}

#[test]
fn disabled_tool_lists_add_up() {
    let mut f = Fixture::new();
    f.global(r#"{"tools":{"disabled":["patch"]}}"#);
    f.project(r#"{"tools":{"disabled":["shell"]}}"#);
    f.env("ODEK_TOOLS_DISABLED", "write_file");
    assert_eq!(
        f.ok().config.tools.disabled,
        vec!["patch", "shell", "write_file"]
    );
}

#[test]
fn loopback_detection() {
    assert!(is_loopback_url("http://127.0.0.1:8080/v1"));
    assert!(is_loopback_url("http://localhost:11434/v1"));
    assert!(is_loopback_url("http://[::1]:8000/v1"));
    assert!(!is_loopback_url("https://api.openai.com/v1"));
}

#[test]
fn templates_load_cleanly_and_match_the_defaults() {
    let mut f = Fixture::new();
    f.global(&template::global_template());
    f.project(&template::project_template());
    let r = f.ok();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(
        r.config.dangerous.non_interactive,
        Some(crate::danger_policy::Action::Deny)
    );
    // The template shows both kinds of MCP server, switched off.
    let servers: Vec<(&str, bool)> = r
        .config
        .mcp_servers
        .iter()
        .map(|(name, s)| (name.as_str(), s.disabled))
        .collect();
    assert_eq!(servers, vec![("everything", true), ("remote", true)]);
    // And a custom provider, not chosen.
    assert_eq!(r.config.provider, None);
    assert_eq!(
        r.config.wire().0,
        crate::llm::Format::Chat,
        "no provider: Chat Completions"
    );
    assert_eq!(
        r.config.providers["my-gateway"].format.as_deref(),
        Some("anthropic")
    );
    let expected = Config {
        dangerous: r.config.dangerous.clone(),
        mcp_servers: r.config.mcp_servers.clone(),
        providers: r.config.providers.clone(),
        ..Config::default()
    };
    assert_eq!(r.config, expected);
    f.env("ODEK_API_KEY", "sk-from-env-0123456789");
    assert_eq!(
        f.ok().config.api_key.as_deref(),
        Some("sk-from-env-0123456789")
    );
}

#[test]
fn config_example_is_the_global_template() {
    let example =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.json"))
            .expect("config.example.json exists");
    assert_eq!(
        example,
        template::global_template(),
        "regenerate config.example.json with `odek init --global`"
    );
}

#[test]
fn every_setting_is_in_the_template_once_and_the_docs_list_them_all() {
    let t: serde_json::Value = serde_json::from_str(&template::global_template()).expect("json");
    let keys = known_keys();
    let mut unique = keys.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), keys.len(), "a key is declared twice");
    for s in settings::SETTINGS.iter() {
        assert!(
            t.pointer(&s.pointer()).is_some(),
            "{} missing from the template",
            s.key
        );
    }
    let doc = include_str!("../../docs/CONFIG.md");
    for table in [settings::doc_key_table(), settings::doc_env_table()] {
        assert!(
            doc.contains(&table),
            "docs/CONFIG.md does not hold the generated table; replace it with:\n{table}"
        );
    }
}

#[test]
fn every_environment_variable_sets_its_row_and_a_bad_value_names_it() {
    for s in settings::SETTINGS.iter() {
        let Some(var) = s.env else { continue };
        let value = match s.kind {
            settings::Kind::Bool => "true".to_string(),
            settings::Kind::Int { range } => range.map_or(7, |(min, _)| min).to_string(),
            settings::Kind::Float { .. } => "0.5".into(),
            settings::Kind::Choice(options) => options[0].to_string(),
            settings::Kind::List if s.key == "fallback_models" => "ollama:a,anthropic:b".into(),
            settings::Kind::List => "a,b".into(),
            settings::Kind::Id => "-1001234".into(),
            _ if s.key == "base_url" => "http://127.0.0.1:8080/v1".into(),
            _ if s.key == "provider" => "ollama".into(),
            _ => "text-0123456789".into(),
        };
        let mut f = Fixture::new();
        f.env(var, &value);
        if var == "ODEK_MAX_COST_USD" {
            // A cost budget needs a model whose price is known.
            f.env("ODEK_MODEL", "claude-sonnet-4-5");
        }
        let r = f.ok();
        assert!(
            matches!(r.source_of(s.key), Source::Env(v) if v == var),
            "{var} sets {}",
            s.key
        );
        if !matches!(s.kind, settings::Kind::Text | settings::Kind::List) {
            f.env(var, "%%%");
            let e = f.load().expect_err("refused").to_string();
            assert!(e.contains(var), "{e}");
        }
    }
}

#[test]
fn mcp_servers_come_from_the_global_file_and_a_project_may_only_disable_them() {
    let f = Fixture::new();
    f.global(
        r#"{"mcp_servers": {
            "fs": {"command": "npx", "args": ["-y", "server-fs"], "env": {"GITHUB_TOKEN": "ghp_0123456789abcdef"}},
            "web": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer tok-0123456789abcdef"}, "timeout_seconds": 5000}
        }}"#,
    );
    f.project(
        r#"{"mcp_servers": {
            "fs": {"disabled": true},
            "web": {"auto_approve": ["fetch"]},
            "other": {"disabled": false},
            "evil": {"command": "sh", "args": ["-c", "id"]}
        }}"#,
    );
    let r = f.ok();
    let fs = &r.config.mcp_servers["fs"];
    assert!(fs.disabled);
    assert_eq!(fs.command.as_deref(), Some("npx"));
    let web = &r.config.mcp_servers["web"];
    assert!(!web.disabled);
    assert!(
        web.auto_approve.is_empty(),
        "a project cannot approve tools"
    );
    assert_eq!(web.timeout_seconds, 600, "clamped");
    assert!(!r.config.mcp_servers.contains_key("evil"));
    let ignored: Vec<&String> = r
        .warnings
        .iter()
        .filter(|w| w.contains("a project may only disable a server"))
        .collect();
    assert_eq!(ignored.len(), 3, "{:?}", r.warnings);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("mcp_servers.web.timeout_seconds=5000"))
    );
    let shown = masked_json(&r.config).to_string();
    let url = McpServerConfig {
        url: Some("https://bob:pw-0123456789@mcp.example.com/mcp?key=k-0123456789abcd&x=".into()),
        ..r.config.mcp_servers["web"].clone()
    };
    assert_eq!(
        url.url_secrets(),
        vec!["bob:pw-0123456789", "pw-0123456789", "k-0123456789abcd"]
    );
    assert!(!shown.contains("ghp_0123456789abcdef"), "{shown}");
    assert!(!shown.contains("tok-0123456789abcdef"), "{shown}");
}

#[test]
fn a_malformed_mcp_server_is_a_configuration_error() {
    for (json, message) in [
        (r#"{"mcp_servers": {"a": {"args": []}}}"#, "set command"),
        (
            r#"{"mcp_servers": {"a": {"command": "x", "url": "http://h/mcp"}}}"#,
            "not both",
        ),
        (
            r#"{"mcp_servers": {"a__b": {"command": "x"}}}"#,
            "single '_'",
        ),
        (
            r#"{"mcp_servers": {"a": {"url": "ws://h/mcp"}}}"#,
            "http://",
        ),
        (
            r#"{"mcp_servers": {"a": {"command": "x", "cwd": "/"}}}"#,
            "unknown field",
        ),
        (
            r#"{"mcp_servers": {"a": {"url": "http://h/mcp", "args": ["x"]}}}"#,
            "stdio server",
        ),
        (
            r#"{"mcp_servers": {"a": {"command": "x", "headers": {"A": "b"}}}}"#,
            "HTTP server",
        ),
        (
            r#"{"mcp_servers": {"a": {"url": "http://h/mcp", "headers": {"Mcp-Session-Id": "1"}}}}"#,
            "set by the MCP transport",
        ),
    ] {
        let f = Fixture::new();
        f.global(json);
        let e = f.load().expect_err("refused").to_string();
        assert!(e.contains(message), "{json}: {e}");
    }
}

#[test]
fn a_provider_sets_endpoint_key_and_model_where_no_layer_did() {
    let mut f = Fixture::new();
    f.env("ODEK_PROVIDER", "anthropic")
        .env("ANTHROPIC_API_KEY", "sk-ant-0123456789")
        .env("ODEK_API_KEY", "sk-generic-0123456789");
    let r = f.ok();
    assert_eq!(r.config.base_url, "https://api.anthropic.com/v1");
    assert_eq!(
        r.source_of("base_url"),
        Source::Provider("anthropic".into())
    );
    assert_eq!(r.config.model, "claude-sonnet-4-5");
    assert_eq!(r.config.api_key.as_deref(), Some("sk-ant-0123456789"));
    assert_eq!(
        r.source_of("api_key"),
        Source::Env("ANTHROPIC_API_KEY".into()),
        "the provider's own key before the generic one"
    );
    assert_eq!(r.config.wire().0, crate::llm::Format::Anthropic);
    // A layer's endpoint and model win; without the provider's key, the generic one serves.
    f.env("ODEK_BASE_URL", "http://127.0.0.1:8080/v1")
        .env("ODEK_MODEL", "local-claude")
        .env("ANTHROPIC_API_KEY", "");
    let r = f.ok();
    assert_eq!(r.config.base_url, "http://127.0.0.1:8080/v1");
    assert_eq!(r.config.model, "local-claude");
    assert_eq!(r.config.api_key.as_deref(), Some("sk-generic-0123456789"));
}

#[test]
fn a_model_written_provider_colon_model_chooses_its_provider() {
    let mut f = Fixture::new();
    f.env("ODEK_MODEL", "anthropic:claude-opus-4-1")
        .env("ANTHROPIC_API_KEY", "sk-ant-0123456789");
    let r = f.ok();
    assert_eq!(r.config.provider.as_deref(), Some("anthropic"));
    assert_eq!(r.config.model, "claude-opus-4-1");
    assert_eq!(r.config.base_url, "https://api.anthropic.com/v1");
    // A model name with a colon that names no provider stays whole; a provider a layer
    // named is not replaced.
    f.env("ODEK_MODEL", "qwen3:8b");
    assert_eq!(f.ok().config.model, "qwen3:8b");
    f.env("ODEK_MODEL", "anthropic:claude-opus-4-1")
        .env("ODEK_PROVIDER", "openai")
        .env("OPENAI_API_KEY", "sk-openai-0123456789");
    let r = f.ok();
    assert_eq!(r.config.provider.as_deref(), Some("openai"));
    assert_eq!(r.config.model, "anthropic:claude-opus-4-1");
}

#[test]
fn custom_providers_come_from_the_global_file_with_their_format_and_headers() {
    let mut f = Fixture::new();
    f.global(
        r#"{"provider": "gw", "providers": {"gw": {"format": "anthropic", "base_url": "https://gw.test/v1", "api_key": "${GW_KEY}", "headers": {"x-team": "blue"}}}}"#,
    );
    f.env("GW_KEY", "gw-0123456789");
    let r = f.ok();
    assert_eq!(r.config.base_url, "https://gw.test/v1");
    assert_eq!(r.config.api_key.as_deref(), Some("gw-0123456789"));
    let (format, headers) = r.config.wire();
    assert_eq!(format, crate::llm::Format::Anthropic);
    assert_eq!(headers, [("x-team".to_string(), "blue".to_string())]);
    let masked = masked_json(&r.config).to_string();
    assert!(
        !masked.contains("gw-0123456789") && !masked.contains("blue"),
        "{masked}"
    );
    // A changed built-in keeps its format and key variable.
    let f = Fixture::new();
    f.global(r#"{"provider": "anthropic", "providers": {"anthropic": {"base_url": "https://proxy.test/v1"}}}"#);
    let r = f.ok();
    assert_eq!(r.config.base_url, "https://proxy.test/v1");
    assert_eq!(r.config.wire().0, crate::llm::Format::Anthropic);
    // Wrong formats and unknown fields are refused, naming the key.
    let f = Fixture::new();
    f.global(r#"{"provider": "gw", "providers": {"gw": {"format": "grpc", "base_url": "https://gw.test/v1"}}}"#);
    let e = f.load().expect_err("unknown format").to_string();
    assert!(
        e.contains("providers.gw") && e.contains("unknown format \"grpc\""),
        "{e}"
    );
    let f = Fixture::new();
    f.global(r#"{"providers": {"gw": {"base_uri": "https://gw.test/v1"}}}"#);
    let e = f.load().expect_err("unknown field").to_string();
    assert!(e.contains("base_uri"), "{e}");
}

#[test]
fn without_a_provider_the_old_key_fallbacks_hold() {
    let mut f = Fixture::new();
    f.env("OPENAI_API_KEY", "sk-openai-0123456789")
        .env("ANTHROPIC_API_KEY", "sk-ant-0123456789");
    let r = f.ok();
    assert_eq!(r.config.provider, None);
    assert_eq!(r.config.base_url, DEFAULT_BASE_URL);
    assert_eq!(r.config.api_key.as_deref(), Some("sk-openai-0123456789"));
    assert_eq!(r.config.wire().0, crate::llm::Format::Chat);
}

#[test]
fn the_providers_page_holds_the_built_in_table() {
    let doc = include_str!("../../docs/PROVIDERS.md");
    let table = providers::doc_table();
    assert!(
        doc.contains(&table),
        "docs/PROVIDERS.md does not hold the table of built-in providers; replace it with:\n{table}"
    );
}

#[test]
fn a_project_may_turn_the_browser_off_and_narrow_it_never_choose_its_program_or_widen_it() {
    let r = Fixture::new().ok();
    assert!(r.config.browser.enabled);
    assert_eq!(r.config.browser.allow_local, "loopback");
    assert_eq!(r.config.browser.executable, "");
    let f = Fixture::new();
    f.project(r#"{"browser":{"enabled":false,"allow_local":"none","executable":"/tmp/evil"}}"#);
    let r = f.ok();
    assert!(!r.config.browser.enabled);
    assert_eq!(r.config.browser.allow_local, "none");
    assert_eq!(r.config.browser.executable, "");
    assert_eq!(r.warnings.len(), 1, "{:#?}", r.warnings);
    assert!(
        r.warnings[0].starts_with(
            "odek: WARNING: ignoring browser.executable (a project may not choose a program odek runs) from project config ("
        ),
        "{}",
        r.warnings[0]
    );
    // Sideways is not narrower: `private` over the default `loopback` is refused.
    let f = Fixture::new();
    f.global(r#"{"browser":{"allow_local":"loopback"}}"#);
    f.project(r#"{"browser":{"allow_local":"private","enabled":true}}"#);
    let r = f.ok();
    assert_eq!(r.config.browser.allow_local, "loopback");
    assert_eq!(r.warnings.len(), 1, "{:#?}", r.warnings);
    assert!(
        r.warnings[0].contains(
            "ignoring browser.allow_local=private (a project may only narrow it to `none`)"
        ),
        "{}",
        r.warnings[0]
    );
    let mut f = Fixture::new();
    f.env("ODEK_BROWSER", "false")
        .env("ODEK_BROWSER_EXECUTABLE", "/opt/chrome/chrome");
    let r = f.ok();
    assert!(!r.config.browser.enabled);
    assert_eq!(r.config.browser.executable, "/opt/chrome/chrome");
}
