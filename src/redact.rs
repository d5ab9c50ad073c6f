//! TEMPORARY placeholder with the agreed API; replaced by the `pure` branch.
#![allow(missing_docs)]
use std::borrow::Cow;

pub const REDACTED: &str = "[REDACTED]";

#[derive(Clone, Default)]
pub struct Redactor {
    known: Vec<String>,
}

impl Redactor {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn add_secret(&mut self, value: &str) {
        if value.len() >= 8 {
            self.known.push(value.to_string());
        }
    }
    pub fn add_secrets_from_env(&mut self, _vars: impl IntoIterator<Item = (String, String)>) {}
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for k in &self.known {
            if out.contains(k.as_str()) {
                out = Cow::Owned(out.replace(k.as_str(), REDACTED));
            }
        }
        out
    }
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => {
                if let Cow::Owned(o) = self.redact(s) {
                    *s = o;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|v| self.redact_json(v)),
            serde_json::Value::Object(m) => m.values_mut().for_each(|v| self.redact_json(v)),
            _ => {}
        }
    }
}

pub fn is_secret_env_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    n.contains("KEY") || n.contains("TOKEN") || n.contains("SECRET") || n.contains("PASSWORD")
}
