//! The configuration as people may see it: secrets masked (`odek config`, `GET /api/config`).

use super::values::Config;

/// The configuration as JSON with the API key masked (`odek config`, `GET /api/config`).
pub fn masked_json(config: &Config) -> serde_json::Value {
    let mut value = serde_json::to_value(config).unwrap_or(serde_json::Value::Null);
    if let Some(key) = value.get_mut("api_key")
        && let Some(k) = key.as_str()
    {
        *key = serde_json::Value::String(mask(k));
    }
    for secret in ["/telegram/bot_token", "/memory/embeddings/api_key"] {
        if let Some(token) = value.pointer_mut(secret)
            && let Some(t) = token.as_str()
        {
            *token = serde_json::Value::String(mask(t));
        }
    }
    if let Some(providers) = value
        .get_mut("providers")
        .and_then(serde_json::Value::as_object_mut)
    {
        for entry in providers.values_mut() {
            if let Some(key) = entry.get_mut("api_key")
                && let Some(k) = key.as_str()
            {
                *key = serde_json::Value::String(mask(k));
            }
            if let Some(headers) = entry
                .get_mut("headers")
                .and_then(serde_json::Value::as_object_mut)
            {
                for header in headers.values_mut() {
                    if let Some(h) = header.as_str() {
                        *header = serde_json::Value::String(mask(h));
                    }
                }
            }
        }
    }
    if let Some(servers) = value
        .get_mut("mcp_servers")
        .and_then(serde_json::Value::as_object_mut)
    {
        for (name, server) in servers.iter_mut() {
            if let Some(url) = server.get_mut("url")
                && let Some(text) = url.as_str()
            {
                let mut shown = text.to_string();
                for secret in config
                    .mcp_servers
                    .get(name)
                    .map(|s| s.url_secrets())
                    .unwrap_or_default()
                {
                    shown = shown.replace(&secret, &mask(&secret));
                }
                *url = serde_json::Value::String(shown);
            }
            for map in ["env", "headers"] {
                if let Some(values) = server
                    .get_mut(map)
                    .and_then(serde_json::Value::as_object_mut)
                {
                    for v in values.values_mut() {
                        if let Some(text) = v.as_str() {
                            *v = serde_json::Value::String(mask(text));
                        }
                    }
                }
            }
        }
    }
    value
}

/// Shows only enough of a secret to recognise it.
pub fn mask(secret: &str) -> String {
    let n = secret.chars().count();
    if n <= 8 {
        return "•".repeat(n.max(4));
    }
    let tail: String = secret.chars().skip(n - 4).collect();
    let head: String = secret.chars().take(3).collect();
    format!("{head}…{tail} ({n} chars)")
}
