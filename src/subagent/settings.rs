//! The child's settings as one layer of the settings stack (`subagent task`): what the
//! parent decided for it — the task's limits, model and tools, the capped policy, depth 1,
//! no memory, the parent's `no_agents`, and for an untrusted task nothing that reaches the network
//! without asking. `odek config` inside a child shows each of these values with that source.

use serde_json::Value;

use super::{TaskFile, Trust, child_policy};
use crate::config::{Config, Overrides};
use crate::protocol::subagent::Handover;

/// The environment variable a child's commands find their task file by, so that `odek
/// config` run inside a child shows the child's settings.
pub const TASK_VAR: &str = "ODEK_SUBAGENT_TASK";

/// The task's layer over `base`, the configuration the parent's layers give (the child's
/// policy is capped from it). `handover` is what the parent passed on its descriptor: the key
/// and the providers' headers.
pub fn task_layer(task: &TaskFile, handover: &Handover, base: &Config) -> Overrides {
    let mut layer = Overrides::default();
    if let Some(key) = &handover.api_key {
        layer.set("api_key", key.as_str());
    }
    set_providers(&mut layer, handover, base);
    // A named agent's prompt is the child's identity (the safety rules stay).
    if let Some(system) = &task.system {
        layer.set("system", system.as_str());
    }
    if let Some(model) = &task.model {
        layer.set("model", model.as_str());
    }
    if let Some(base_url) = &task.base_url {
        layer.set("base_url", base_url.as_str());
    }
    if let Some(provider) = &task.provider {
        layer.set("provider", provider.as_str());
    }
    layer.set("max_iterations", task.max_iter);
    layer.set("limits.max_runtime_seconds", task.timeout_seconds);
    // Its share of the parent's cost budget, over whatever the child's own layers say
    // (`ODEK_MAX_COST_USD` in its environment is the parent's whole budget).
    if let Some(share) = task.max_cost_usd.filter(|share| *share > 0.0) {
        layer.set("limits.max_cost_usd", share);
    }
    // Depth 1: a sub-agent never delegates. It is short-lived and not the user's: no memory
    // block, no memory writes, no recall. It reads the project's instructions as its parent
    // does (docs/INSTRUCTIONS.md), none when the parent read none.
    layer.set("subagents.enabled", false);
    layer.set("memory.enabled", false);
    layer.set("no_agents", task.no_agents);
    if let Some(sandbox) = task.sandbox {
        layer.set("sandbox", sandbox);
    }
    if let Some(planning) = task.planning {
        layer.set("planning.enabled", planning);
    }
    if let Some(tools) = &task.tools {
        layer.set("tools.enabled", tools.enabled.clone());
        layer.set("tools.disabled", tools.disabled.clone());
    }
    set_policy(&mut layer, task, base);
    if task.trust_level == Trust::Untrusted {
        // Nothing reaches the network without asking: no MCP servers, no search instance,
        // no host that skips the approval (which nobody can give), no local address.
        layer.set("mcp_servers", Value::Object(serde_json::Map::new()));
        layer.set("web_search.base_url", "");
        layer.set("web.allow_hosts", Value::Array(Vec::new()));
        // Its browser (its own, in its own process) reaches no local address unlisted.
        layer.set("browser.allow_local", "none");
    }
    layer
}

/// The five `dangerous.*` rows of the child's policy: the task's (or the parent's), capped
/// by its trust and highest class.
fn set_policy(layer: &mut Overrides, task: &TaskFile, base: &Config) {
    let below = task.policy.as_ref().unwrap_or(&base.dangerous);
    let mut capped = base.clone();
    capped.dangerous = child_policy(below, task.trust_level, task.max_risk);
    for key in [
        "dangerous.action",
        "dangerous.non_interactive",
        "dangerous.classes",
        "dangerous.allowlist",
        "dangerous.denylist",
    ] {
        if let Some(row) = crate::config::settings::setting(key) {
            layer.set(row.key, (row.get)(&capped));
        }
    }
}

/// The parent's provider headers and its fallback providers' keys over the child's own
/// entries (whose `${VAR}`s found nothing: the variables are kept from the child's
/// environment).
fn set_providers(layer: &mut Overrides, handover: &Handover, base: &Config) {
    if handover.headers.is_empty() && handover.keys.is_empty() {
        return;
    }
    // The task's map replaces the child's whole `providers`: every entry of its own stays.
    let ids = base
        .providers
        .keys()
        .chain(handover.headers.keys())
        .chain(handover.keys.keys());
    let mut entries = serde_json::Map::new();
    for id in ids {
        let mut entry = base.providers.get(id).cloned().unwrap_or_default();
        if let Some(headers) = handover.headers.get(id) {
            entry.headers = headers.clone();
        }
        if let Some(key) = handover.keys.get(id) {
            entry.api_key = Some(key.clone());
        }
        if let Ok(value) = serde_json::to_value(entry) {
            entries.insert(id.clone(), value);
        }
    }
    layer.set("providers", Value::Object(entries));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallbacks_keys_join_the_childs_own_provider_entries() {
        let task: TaskFile = serde_json::from_value(serde_json::json!({"goal": "g", "index": 1,
            "total": 1, "max_iter": 15, "timeout_seconds": 60}))
        .expect("task");
        let mut base = Config::default();
        base.providers.insert("main".into(), Default::default());
        let backup = crate::config::providers::ProviderConfig {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            ..Default::default()
        };
        base.providers.insert("backup".into(), backup);
        let handover = Handover {
            keys: [("backup".to_string(), "sk-backup".to_string())].into(),
            ..Handover::default()
        };
        let layer = task_layer(&task, &handover, &base);
        let providers = layer.get("providers").expect("providers");
        assert_eq!(providers["backup"]["api_key"], "sk-backup");
        assert_eq!(providers["backup"]["base_url"], "http://127.0.0.1:9/v1");
        assert!(
            providers.get("main").is_some(),
            "the task's map replaces the child's"
        );
        assert!(
            task_layer(&task, &Handover::default(), &base)
                .get("providers")
                .is_none()
        );
    }
}
