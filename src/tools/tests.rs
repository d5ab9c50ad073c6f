use super::*;
use crate::plan::{PlanLimits, PlanStore};

fn store() -> Option<Arc<PlanStore>> {
    Some(Arc::new(PlanStore::new(PlanLimits::default())))
}

/// `memory` and `session_search` over a database in a directory kept for the test run.
fn memory_tools() -> Vec<Arc<dyn Tool>> {
    let home = tempfile::tempdir().expect("tempdir").keep();
    let memory = Arc::new(crate::memory::Memory::open(&home).expect("opens"));
    let taint: Arc<Taint> = Arc::default();
    vec![
        Arc::new(crate::memory::tool::MemoryTool::new(
            memory.clone(),
            "/p".into(),
            crate::memory::Budgets::default(),
            None,
            taint.clone(),
        )),
        Arc::new(crate::memory::search_tool::SessionSearchTool::new(
            memory,
            crate::session::SessionStore::new(&home, Arc::default()),
            None,
            None,
            taint,
        )),
    ]
}

/// Every part present: a plan store, a search instance, delegation, memory.
fn full() -> RegistryParts {
    RegistryParts {
        plan: store(),
        memory: memory_tools(),
        skills: crate::skills::tools::skill_tools(Arc::new(crate::skills::Catalog::default())),
        delegate: Some(Arc::new(crate::subagent::DelegateTasksTool::new(
            crate::subagent::DelegateSettings {
                slots: Arc::new(tokio::sync::Semaphore::new(3)),
                tools: crate::config::ToolsConfig::default(),
                timeout: std::time::Duration::from_secs(120),
                max_iter: 15,
                model: "m".into(),
                base_url: "http://127.0.0.1:9/v1".into(),
                provider: None,
                api_key: None,
                provider_headers: Default::default(),
                fallback_keys: Default::default(),
                parent_session: None,
                checkpoints: None,
                asker: None,
                policy: crate::danger_policy::DangerPolicy::default(),
                sandbox: false,
                planning: true,
                no_agents: false,
                task_dir: std::env::temp_dir(),
                agents: Default::default(),
            },
        ))),
        search: Some(Arc::new(web::SearchSettings {
            base_url: "http://127.0.0.1:8888".into(),
            max_results: 10,
            timeout: std::time::Duration::from_secs(15),
            language: String::new(),
            categories: String::new(),
        })),
        jobs: Some(Arc::new(background::Jobs::new(background::JobLimits {
            output_bytes: 1024,
            max_jobs: 1,
            max_time: std::time::Duration::from_secs(10),
        }))),
        browser: Some(Arc::new(browser::BrowserTool::new(
            Arc::default(),
            Arc::new(browser::BrowserSettings {
                executable: "chromium".into(),
                allow_local: browser::AllowLocal::Loopback,
                web: Arc::default(),
                timeout: std::time::Duration::from_secs(30),
                images: false,
            }),
        ))),
        ..RegistryParts::default()
    }
}

#[test]
fn default_registry_order_is_stable() {
    let r = build_registry(&ToolSelection::default(), full()).expect("builds");
    let table: Vec<&str> = catalog::TOOLS.iter().map(|row| row.name).collect();
    assert_eq!(r.names(), table);
    let defs: Vec<&str> = r.defs().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(defs, table);
}

#[test]
fn the_external_names_are_the_external_tools() {
    let r = build_registry(&ToolSelection::default(), full()).expect("builds");
    for name in r.names() {
        let tool = r.get(name).expect("tool");
        assert_eq!(tool.external(), is_external_tool_name(name), "{name}");
    }
    assert!(is_external_tool_name("everything__echo"));
}

#[test]
fn plan_tool_exactly_when_a_store_exists() {
    let r = build_registry(&ToolSelection::default(), RegistryParts::default()).expect("builds");
    assert!(r.get("plan").is_none());
    assert!(
        build_registry(&ToolSelection::default(), full())
            .expect("builds")
            .get("plan")
            .is_some()
    );
}

#[test]
fn enabled_selects_and_orders_disabled_removes() {
    let sel = ToolSelection {
        enabled: vec!["shell".into(), "read_file".into(), "patch".into()],
        disabled: vec!["patch".into()],
    };
    let r = build_registry(&sel, full()).expect("builds");
    assert_eq!(r.names(), vec!["shell", "read_file"]);
}

#[test]
fn unknown_tool_names_are_errors() {
    let sel = ToolSelection {
        enabled: vec![],
        disabled: vec!["shel".into()],
    };
    let e = build_registry(&sel, RegistryParts::default())
        .err()
        .expect("error");
    assert!(e.to_string().contains("unknown tool \"shel\""), "{e}");
}

#[test]
fn every_schema_is_an_object_with_required_fields_declared() {
    let r = build_registry(&ToolSelection::default(), full()).expect("builds");
    for def in r.defs() {
        assert_eq!(def.parameters["type"], "object", "{}", def.name);
        let props = def.parameters["properties"]
            .as_object()
            .expect("properties");
        if let Some(req) = def.parameters.get("required").and_then(|v| v.as_array()) {
            for field in req {
                assert!(
                    props.contains_key(field.as_str().expect("str")),
                    "{}",
                    def.name
                );
            }
        }
    }
}

/// The tools as a request carries them (`{"type":"function","function":{…}}` each).
fn request_bytes(def: &crate::llm::ToolDef) -> usize {
    serde_json::to_string(def).expect("json").len()
}

/// Each tool's share of the 12 KB every request carries (SPEC §14), in bytes as sent, with
/// the shares of the tools still to come held back; a description or schema that grows
/// past its share fails here, not in a user's bill.
const SCHEMA_BUDGETS: &[(&str, usize)] = &[
    ("read_file", 700),
    ("write_file", 560),
    ("search_files", 1000),
    ("patch", 800),
    ("glob", 560),
    ("batch_read", 560),
    ("batch_patch", 560),
    ("shell", 880),
    ("background", 440),
    ("delegate_tasks", 890),
    ("web_fetch", 360),
    ("web_search", 330),
    ("browser", 800),
    ("clarify", 420),
    ("memory", 780),
    ("session_search", 360),
    ("skill_load", 260),
    ("skill_list", 240),
    ("plan", 1500),
];

/// Held back for the tools of later issues.
const RESERVED: &[(&str, usize)] = &[];

/// The tools' part of a request may not pass this (SPEC §14).
const ALL_TOOLS_BUDGET: usize = 12 * 1000;

#[test]
fn every_schema_stays_within_its_byte_budget_and_all_within_12_kb() {
    let r = build_registry(&ToolSelection::default(), full()).expect("builds");
    let names: Vec<&str> = SCHEMA_BUDGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(r.names(), names, "every built-in tool has a budget");
    let mut used = 0;
    for def in r.defs() {
        let budget = SCHEMA_BUDGETS
            .iter()
            .find(|(n, _)| *n == def.name)
            .map(|(_, b)| *b)
            .expect("budgeted");
        let bytes = request_bytes(def);
        assert!(
            bytes <= budget,
            "{}: {bytes} bytes, budget {budget}",
            def.name
        );
        used += bytes;
    }
    let shares: usize = SCHEMA_BUDGETS.iter().chain(RESERVED).map(|(_, b)| b).sum();
    assert!(shares <= ALL_TOOLS_BUDGET, "the shares add up to {shares}");
    let array = serde_json::to_string(r.defs()).expect("json");
    assert!(
        array.len() <= ALL_TOOLS_BUDGET - RESERVED.iter().map(|(_, b)| b).sum::<usize>(),
        "{}",
        array.len()
    );
    assert!(used < array.len(), "{used}");
}

/// `args_summary` of each new tool names what it acts on, never content (docs/EVENTS.md).
#[test]
fn event_summaries_name_paths_and_hosts_never_content() {
    let r = build_registry(&ToolSelection::default(), full()).expect("builds");
    let summary = |tool: &str, args: serde_json::Value| {
        r.get(tool)
            .expect(tool)
            .event_summary(&args)
            .expect("a summary")
    };
    assert_eq!(
        summary(
            "glob",
            serde_json::json!({"pattern": "**/*.rs", "path": "src"})
        ),
        serde_json::json!({"path": "src"})
    );
    let many: Vec<serde_json::Value> = (0..20)
        .map(|i| serde_json::json!({"path": format!("f{i}"), "old_string": "secret text"}))
        .collect();
    let patched = summary("batch_patch", serde_json::json!({"patches": many}));
    assert_eq!(patched["path"].as_array().map(Vec::len), Some(16));
    assert!(!patched.to_string().contains("secret text"));
    assert_eq!(
        summary(
            "batch_read",
            serde_json::json!({"files": [{"path": "a"}, {"path": "a"}, {"path": "b"}]})
        ),
        serde_json::json!({"path": ["a", "b"]})
    );
    assert_eq!(
        summary(
            "web_fetch",
            serde_json::json!({"url": "https://Docs.rs/x?token=abc"})
        ),
        serde_json::json!({"host": "docs.rs"})
    );
    assert_eq!(
        summary(
            "web_search",
            serde_json::json!({"query": "my private question"})
        ),
        serde_json::json!({"host": "127.0.0.1"})
    );
    assert_eq!(
        summary(
            "clarify",
            serde_json::json!({"question": "the password?", "options": ["a", "b"]})
        ),
        serde_json::json!({"options": 2})
    );
}

/// The schemas are JSON text (smaller in the binary than `json!`); the limits they state
/// are the ones the code holds to.
#[test]
fn every_schemas_limits_are_the_ones_the_code_holds_to() {
    let r = build_registry(&ToolSelection::default(), full()).expect("builds");
    let at = |tool: &str, pointer: &str| {
        let def = r.defs().iter().find(|d| d.name == tool).expect(tool);
        def.parameters
            .pointer(pointer)
            .and_then(Value::as_u64)
            .map(|n| n as usize)
    };
    let limits = [
        (
            "read_file",
            "/properties/limit/maximum",
            read_file::MAX_LIMIT,
        ),
        ("glob", "/properties/limit/maximum", glob::MAX_LIMIT),
        (
            "search_files",
            "/properties/limit/maximum",
            search_files::MAX_LIMIT,
        ),
        (
            "batch_read",
            "/properties/files/maxItems",
            batch_read::MAX_FILES,
        ),
        (
            "batch_read",
            "/properties/files/items/properties/limit/maximum",
            read_file::MAX_LIMIT,
        ),
        (
            "batch_patch",
            "/properties/patches/maxItems",
            batch_patch::MAX_PATCHES,
        ),
        (
            "clarify",
            "/properties/options/maxItems",
            clarify::MAX_OPTIONS,
        ),
        (
            "web_fetch",
            "/properties/max_chars/maximum",
            web::MAX_MAX_CHARS,
        ),
        (
            "web_search",
            "/properties/max_results/maximum",
            web::MAX_RESULTS,
        ),
        (
            "session_search",
            "/properties/limit/maximum",
            crate::memory::search_tool::MAX_LIMIT,
        ),
        (
            "delegate_tasks",
            "/properties/tasks/maxItems",
            crate::subagent::MAX_TASKS,
        ),
    ];
    for (tool, pointer, limit) in limits {
        assert_eq!(at(tool, pointer), Some(limit), "{tool} {pointer}");
    }
}
