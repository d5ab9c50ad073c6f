//! Reading one configuration file: size cap, JSON with line numbers, unknown-key warnings with
//! suggestions (the known keys are the settings table's), `${VAR}` substitution and the
//! permission check. The values are decoded by their rows when the layer is merged.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::error::{ConfigError, MAX_CONFIG_BYTES};

/// Reads the file at `path` (its JSON, `${VAR}`s substituted); `Ok(None)` when it does not
/// exist.
pub(super) fn read_file(
    path: &Path,
    env: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
) -> Result<Option<Value>, ConfigError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut value: Value = serde_json::from_str(&text).map_err(|e| {
        let (line, column) = error_position(&text, e.line(), e.column());
        ConfigError::InvalidJson {
            path: path.to_path_buf(),
            line,
            column,
            message: strip_position(&e.to_string()),
        }
    })?;
    if !value.is_object() {
        return Err(ConfigError::InvalidValue {
            origin: path.display().to_string(),
            key: "(top level)".into(),
            message: "expected a JSON object".into(),
        });
    }
    warn_if_readable_secret(path, &meta, &value, warnings);
    for key in super::layers::unknown_keys(&value) {
        warnings.push(unknown_key_warning(path, &key));
    }
    substitute_strings(&mut value, env);
    Ok(Some(value))
}

/// serde_json reports errors found at a newline as "line N+1, column 0"; point at the end of
/// the line the user has to fix instead.
fn error_position(text: &str, line: usize, column: usize) -> (usize, usize) {
    if column > 0 || line < 2 {
        return (line, column.max(1));
    }
    let previous = text.lines().nth(line - 2).unwrap_or("");
    (line - 1, previous.chars().count().max(1))
}

/// serde_json appends " at line L column C"; the error already says where.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

fn warn_if_readable_secret(
    path: &Path,
    meta: &std::fs::Metadata,
    value: &Value,
    warnings: &mut Vec<String>,
) {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    let holds_key = value
        .get("api_key")
        .and_then(Value::as_str)
        .is_some_and(|k| !k.is_empty() && !k.starts_with('$'));
    if holds_key && mode & 0o077 != 0 {
        warnings.push(format!(
            "odek: WARNING: config {p} is group/world-readable ({mode:04o}) and holds an API key; run `chmod 600 {p}`",
            p = path.display()
        ));
    }
}

fn unknown_key_warning(path: &Path, key: &str) -> String {
    let candidates = super::layers::known_keys().into_iter().flat_map(|k| {
        // Offer both whole paths and section names ("planing" → "planning").
        let mut v = vec![k.to_string()];
        if let Some((section, _)) = k.split_once('.') {
            v.push(section.to_string());
        }
        v
    });
    let best = candidates
        .map(|c| (strsim::jaro_winkler(key, &c), c))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let hint = best
        .map(|(_, c)| format!(" (did you mean \"{c}\"?)"))
        .unwrap_or_default();
    format!(
        "odek: warning: config {}: unknown key \"{key}\"{hint}",
        path.display()
    )
}

fn substitute_strings(value: &mut Value, env: &BTreeMap<String, String>) {
    match value {
        Value::String(s) if s.contains('$') => *s = substitute_env(s, env),
        Value::Array(items) => items.iter_mut().for_each(|v| substitute_strings(v, env)),
        Value::Object(map) => map.values_mut().for_each(|v| substitute_strings(v, env)),
        _ => {}
    }
}

/// Expands `${NAME}` and `$NAME` from `env` (unset = empty). `$$` is a literal `$`; any other
/// `$` (not followed by a name, or an unterminated `${`) is kept exactly as typed.
pub fn substitute_env(input: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) if is_name(&braced[..end]) => {
                    out.push_str(env.get(&braced[..end]).map_or("", String::as_str));
                    rest = &braced[end + 1..];
                }
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        } else {
            let len = name_len(after);
            if len == 0 {
                out.push('$');
            } else {
                out.push_str(env.get(&after[..len]).map_or("", String::as_str));
            }
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    out
}

fn name_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    if bytes
        .first()
        .is_none_or(|b| !(b.is_ascii_alphabetic() || *b == b'_'))
    {
        return 0;
    }
    bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count()
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && name_len(s) == s.len()
}
