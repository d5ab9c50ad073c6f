//! Known model families: display label, default thinking mode, request timeout and context
//! window, looked up by the longest matching name prefix.
//!
//! Only hosted models whose limits are published and stable are listed. Open-weight families
//! (Qwen, Llama, Mistral, gpt-oss…) are deliberately absent: served by llama.cpp, vLLM or
//! Ollama their usable window is whatever the server was started with (Ollama defaults to a
//! few thousand tokens), so a table entry would overstate it; `GET /models` discovery covers
//! the servers that report it.

use std::time::Duration;

use serde_json::Value;

/// Defaults for one model family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelProfile {
    /// Model-name prefix this profile applies to (lowercase).
    pub prefix: &'static str,
    /// Human-readable name.
    pub label: &'static str,
    /// Thinking mode used when the user set none (`"enabled"`, …).
    pub default_thinking: Option<&'static str>,
    /// Request timeout when the user set none (`None` = the client default).
    pub request_timeout: Option<Duration>,
    /// Context window in tokens.
    pub context_window: Option<u64>,
}

const fn profile(
    prefix: &'static str,
    label: &'static str,
    timeout_secs: Option<u64>,
    context_window: u64,
) -> ModelProfile {
    ModelProfile {
        prefix,
        label,
        default_thinking: None,
        request_timeout: match timeout_secs {
            Some(s) => Some(Duration::from_secs(s)),
            None => None,
        },
        context_window: Some(context_window),
    }
}

/// The profile table; [`profile_for`] picks the longest matching prefix.
pub const MODEL_PROFILES: &[ModelProfile] = &[
    ModelProfile {
        default_thinking: Some("enabled"),
        ..profile("deepseek-v4-pro", "DeepSeek v4 Pro", Some(180), 1_000_000)
    },
    profile("deepseek-v4-flash", "DeepSeek v4 Flash", Some(90), 131_072),
    profile("deepseek-", "DeepSeek (generic)", None, 131_072),
    profile("glm-5.3", "GLM 5.3", Some(300), 1_000_000),
    profile("glm-5.2", "GLM 5.2", Some(300), 1_000_000),
    profile("glm-5-turbo", "GLM 5 Turbo", Some(180), 200_000),
    profile("glm-", "GLM (generic)", Some(180), 131_072),
    profile("kimi-", "Kimi (generic)", Some(300), 262_144),
    profile("k3-256k", "K3 256k", Some(300), 262_144),
    profile("k3", "K3", Some(300), 1_000_000),
    profile("gpt-5", "GPT-5", None, 400_000),
    profile("gpt-5-chat", "GPT-5 Chat", None, 128_000),
    profile("gpt-4.1", "GPT-4.1", None, 1_047_576),
    profile("gpt-4o", "GPT-4o", None, 128_000),
    profile("gpt-4-turbo", "GPT-4 Turbo", None, 128_000),
    profile("gpt-3.5-turbo", "GPT-3.5 Turbo", None, 16_385),
    profile("o3", "OpenAI o3", None, 200_000),
    profile("o4-mini", "OpenAI o4-mini", None, 200_000),
    profile("claude-", "Claude", None, 200_000),
    profile("gemini-2.0", "Gemini 2.0", None, 1_048_576),
    profile("gemini-2.5", "Gemini 2.5", None, 1_048_576),
];

/// The profile of `model`: longest prefix match, case-insensitive. A provider prefix such as
/// `deepseek/` (OpenRouter style) is ignored when the full name matches nothing.
pub fn profile_for(model: &str) -> Option<&'static ModelProfile> {
    let model = model.trim().to_ascii_lowercase();
    let bare = model.rsplit('/').next().unwrap_or(&model);
    longest_prefix_match(&model).or_else(|| longest_prefix_match(bare))
}

fn longest_prefix_match(name: &str) -> Option<&'static ModelProfile> {
    MODEL_PROFILES
        .iter()
        .filter(|p| name.starts_with(p.prefix))
        .max_by_key(|p| p.prefix.len())
}

/// A context size a `GET /models` entry gives, and under which field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListedWindow {
    /// Tokens.
    pub tokens: u64,
    /// The field it was read from (`context_length`, `meta.n_ctx_train`…).
    pub field: &'static str,
    /// True when the field is what the server serves; false for llama.cpp's
    /// `meta.n_ctx_train`, what the model was trained with (the server may serve less).
    pub served: bool,
}

/// The fields read, in order of preference: what the server serves (vLLM's `max_model_len`,
/// OpenRouter's and LM Studio's `context_length`…), and last llama.cpp's `meta.n_ctx_train`.
const LISTING_FIELDS: &[(&str, &str, bool)] = &[
    ("/max_model_len", "max_model_len", true),
    ("/context_length", "context_length", true),
    ("/max_context", "max_context", true),
    ("/max_input_tokens", "max_input_tokens", true),
    ("/meta/n_ctx_train", "meta.n_ctx_train", false),
];

/// Context window of `model` from a `GET /models` listing: its entry in `data` or `models`
/// (matched by `id`, `name` or `model`; a listing of exactly one model is taken as the served
/// one, as llama.cpp serves whatever name is asked for), from the first of
/// [`LISTING_FIELDS`] it has.
pub(crate) fn context_window_from_listing(listing: &Value, model: &str) -> Option<ListedWindow> {
    model_entries(listing, model)
        .into_iter()
        .find_map(window_of_entry)
}

/// True when the listing comes from llama.cpp's `llama-server` (its entries carry `meta`
/// or are `owned_by` `llamacpp`), which tells its served context on `/props`.
pub(crate) fn is_llama_cpp_listing(listing: &Value) -> bool {
    entries(listing).iter().any(|e| {
        e.get("meta").is_some_and(Value::is_object)
            || e.get("owned_by").and_then(Value::as_str) == Some("llamacpp")
    })
}

/// The served context on llama-server's `/props`: `default_generation_settings.n_ctx` (the
/// context of one slot, what one request may use), else a top-level `n_ctx`.
pub(crate) fn served_context_from_props(props: &Value) -> Option<u64> {
    positive_count(props.pointer("/default_generation_settings/n_ctx"))
        .or_else(|| positive_count(props.get("n_ctx")))
}

fn entries(listing: &Value) -> Vec<&Value> {
    ["data", "models"]
        .iter()
        .filter_map(|key| listing.get(*key).and_then(Value::as_array))
        .flatten()
        .collect()
}

/// The model names of a `GET /models` listing (`id`, else `name`, else `model` of each entry
/// in `data` or `models`), in its order, each once.
pub(crate) fn listed_model_names(listing: &Value) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for entry in entries(listing) {
        let name = ["id", "name", "model"]
            .iter()
            .find_map(|key| entry.get(*key).and_then(Value::as_str));
        if let Some(n) = name.filter(|n| !n.is_empty() && !names.iter().any(|k| k == n)) {
            names.push(n.to_string());
        }
    }
    names
}

fn model_entries<'a>(listing: &'a Value, model: &str) -> Vec<&'a Value> {
    let entries = entries(listing);
    let named = |entry: &&Value| {
        ["id", "name", "model"]
            .iter()
            .any(|key| entry.get(*key).and_then(Value::as_str) == Some(model))
    };
    let matching: Vec<&Value> = entries.iter().copied().filter(named).collect();
    if matching.is_empty() && single_model(&entries) {
        entries
    } else {
        matching
    }
}

/// True when every entry describes the same model (llama.cpp lists it in both arrays).
fn single_model(entries: &[&Value]) -> bool {
    let name = |e: &Value| {
        ["id", "model", "name"]
            .iter()
            .find_map(|k| e.get(*k).and_then(Value::as_str).map(str::to_string))
    };
    let mut names = entries.iter().map(|e| name(e));
    match names.next() {
        Some(first) => names.all(|n| n == first),
        None => false,
    }
}

fn window_of_entry(entry: &Value) -> Option<ListedWindow> {
    LISTING_FIELDS.iter().find_map(|(pointer, field, served)| {
        Some(ListedWindow {
            tokens: positive_count(entry.pointer(pointer))?,
            field,
            served: *served,
        })
    })
}

fn positive_count(value: Option<&Value>) -> Option<u64> {
    let count = match value? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }?;
    (count > 0).then_some(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn longest_prefix_wins() {
        let pro = profile_for("deepseek-v4-pro").expect("known");
        assert_eq!(pro.label, "DeepSeek v4 Pro");
        assert_eq!(pro.default_thinking, Some("enabled"));
        assert_eq!(pro.request_timeout, Some(Duration::from_secs(180)));
        assert_eq!(pro.context_window, Some(1_000_000));
        let flash = profile_for("DeepSeek-V4-Flash").expect("case-insensitive");
        assert_eq!(flash.context_window, Some(131_072));
        assert_eq!(flash.default_thinking, None);
        assert_eq!(
            profile_for("deepseek-chat").map(|p| p.label),
            Some("DeepSeek (generic)")
        );
        assert_eq!(
            profile_for("k3-256k-preview").and_then(|p| p.context_window),
            Some(262_144)
        );
        assert_eq!(
            profile_for("gpt-4o-mini").and_then(|p| p.context_window),
            Some(128_000)
        );
        assert_eq!(
            profile_for("gpt-5-mini").and_then(|p| p.context_window),
            Some(400_000)
        );
        assert_eq!(
            profile_for("gpt-5-chat-latest").and_then(|p| p.context_window),
            Some(128_000)
        );
        assert_eq!(
            profile_for("openai/gpt-4.1").map(|p| p.label),
            Some("GPT-4.1")
        );
        assert!(profile_for("llama3.1:8b").is_none());
        assert!(profile_for("").is_none());
    }

    #[test]
    fn every_prefix_is_lowercase_and_unique() {
        for (i, p) in MODEL_PROFILES.iter().enumerate() {
            assert_eq!(p.prefix, p.prefix.to_ascii_lowercase());
            assert!(MODEL_PROFILES[i + 1..].iter().all(|q| q.prefix != p.prefix));
        }
    }

    #[test]
    fn listing_fields_in_order_of_preference() {
        let tokens = |listing: &Value, model: &str| {
            context_window_from_listing(listing, model).map(|w| (w.tokens, w.field))
        };
        let listing = json!({"data":[
            {"id":"other","context_length":1000},
            {"id":"m","max_context":"4096","max_input_tokens":2048}
        ]});
        assert_eq!(tokens(&listing, "m"), Some((4096, "max_context")));
        assert_eq!(tokens(&listing, "other"), Some((1000, "context_length")));
        assert_eq!(tokens(&listing, "absent"), None);
        let ollama_style = json!({"models":[{"name":"m","max_input_tokens":777}]});
        assert_eq!(tokens(&ollama_style, "m"), Some((777, "max_input_tokens")));
        let zero = json!({"data":[{"id":"m","context_length":0,"max_input_tokens":5}]});
        assert_eq!(tokens(&zero, "m"), Some((5, "max_input_tokens")));
        let vllm = json!({"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm","max_model_len":16384}]});
        assert_eq!(tokens(&vllm, "m"), Some((16384, "max_model_len")));
        assert!(!is_llama_cpp_listing(&vllm));
    }

    #[test]
    fn llama_cpp_single_model_listing() {
        let listing = json!({
            "models":[{"name":"qwen.gguf","model":"qwen.gguf"}],
            "object":"list",
            "data":[{"id":"qwen.gguf","object":"model","owned_by":"llamacpp","meta":{"n_ctx_train":32768}}]
        });
        let trained = context_window_from_listing(&listing, "whatever").expect("a size");
        assert_eq!((trained.tokens, trained.served), (32768, false));
        assert!(is_llama_cpp_listing(&listing));
        assert_eq!(context_window_from_listing(&json!({"data":[]}), "m"), None);
        assert_eq!(context_window_from_listing(&json!("nonsense"), "m"), None);
    }

    #[test]
    fn llama_server_props() {
        let props =
            json!({"default_generation_settings":{"n_ctx":2048,"params":{}},"total_slots":1});
        assert_eq!(served_context_from_props(&props), Some(2048));
        assert_eq!(
            served_context_from_props(&json!({"n_ctx":4096})),
            Some(4096)
        );
        assert_eq!(served_context_from_props(&json!({"total_slots":1})), None);
    }
}
