//! Optional embeddings (`memory.embeddings.base_url` and `.model`: any OpenAI-compatible
//! `/v1/embeddings`): vectors of session passages and episodes, stored in `odek.db`, and
//! hybrid ranking — BM25 and cosine similarity fused by reciprocal rank. Without an endpoint
//! (or when it fails) everything ranks lexically.

use std::time::Duration;

use rusqlite::params;
use serde::Deserialize;

use super::{Memory, MemoryError};

/// How long one embeddings call may take.
const TIMEOUT: Duration = Duration::from_secs(20);
/// Reciprocal-rank-fusion constant (the usual 60).
const RRF_K: f64 = 60.0;
/// Longest text sent for one vector, in bytes.
const MAX_INPUT_BYTES: usize = 6000;

/// An embeddings endpoint.
#[derive(Clone)]
pub struct Embedder {
    client: reqwest::Client,
    url: String,
    model: String,
    api_key: Option<String>,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("url", &self.url)
            .field("model", &self.model)
            .finish()
    }
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl Embedder {
    /// The endpoint at `base_url` (…/v1) with `model`; `None` when either is empty.
    pub fn new(base_url: &str, model: &str, api_key: Option<String>) -> Option<Embedder> {
        let (base_url, model) = (base_url.trim(), model.trim());
        if base_url.is_empty() || model.is_empty() {
            return None;
        }
        let client = crate::llm::http::client_builder()
            .timeout(TIMEOUT)
            .build()
            .ok()?;
        Some(Embedder {
            client,
            url: format!("{}/embeddings", base_url.trim_end_matches('/')),
            model: model.to_string(),
            api_key,
        })
    }

    /// The model's name (vectors are kept per model).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// One vector per text, in order.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let input: Vec<String> = texts
            .iter()
            .map(|t| crate::text::head_and_tail(t, MAX_INPUT_BYTES).into_owned())
            .collect();
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .body(serde_json::json!({"model": self.model, "input": input}).to_string());
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        if !status.is_success() {
            return Err(EmbedError::Status(status));
        }
        let parsed: EmbeddingsResponse = serde_json::from_slice(&body)?;
        let mut items = parsed.data;
        if items.len() != texts.len() {
            return Err(EmbedError::Count {
                vectors: items.len(),
                inputs: texts.len(),
            });
        }
        items.sort_by_key(|i| i.index.unwrap_or(0));
        Ok(items.into_iter().map(|i| i.embedding).collect())
    }
}

/// Why the embeddings endpoint gave no vectors (search then ranks lexically).
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The request did not complete.
    #[error("embeddings: {0}")]
    Http(#[from] reqwest::Error),
    /// The endpoint answered with an error status.
    #[error("embeddings: {0}")]
    Status(reqwest::StatusCode),
    /// The body is not an embeddings response.
    #[error("embeddings: {0}")]
    Body(#[from] serde_json::Error),
    /// Not one vector per input.
    #[error("embeddings: {vectors} vectors for {inputs} inputs")]
    Count {
        /// Vectors answered.
        vectors: usize,
        /// Texts sent.
        inputs: usize,
    },
}

impl crate::error::Classified for EmbedError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Remote
    }

    fn hint(&self) -> Option<&'static str> {
        Some(
            "check memory.embeddings (base_url, model, api_key) in the global config.json, or ODEK_EMBEDDINGS_URL",
        )
    }
}

/// Cosine similarity (0 for vectors of different lengths or zero length).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// Fuses two rankings of keys (best first) by reciprocal rank; best first.
pub fn fuse(lexical: &[String], semantic: &[String]) -> Vec<String> {
    let mut scores: Vec<(String, f64)> = Vec::new();
    for list in [lexical, semantic] {
        for (rank, key) in list.iter().enumerate() {
            let s = 1.0 / (RRF_K + rank as f64 + 1.0);
            match scores.iter_mut().find(|(k, _)| k == key) {
                Some((_, total)) => *total += s,
                None => scores.push((key.clone(), s)),
            }
        }
    }
    scores.sort_by(|a, b| b.1.total_cmp(&a.1));
    scores.into_iter().map(|(k, _)| k).collect()
}

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

impl Memory {
    /// Stores the vector of `key` (`kind` = `session` or `episode`) for `model`.
    pub fn store_vector(
        &self,
        kind: &str,
        key: &str,
        model: &str,
        vector: &[f32],
    ) -> Result<(), MemoryError> {
        self.conn()
            .execute(
                "INSERT INTO vectors (kind, key, model, vector) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (kind, key) DO UPDATE SET model = ?3, vector = ?4",
                params![kind, key, model, to_blob(vector)],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Keys of `kind` ranked by cosine similarity to `query` (vectors of `model` only),
    /// best first, at most `limit`.
    pub fn nearest(
        &self,
        kind: &str,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<String>, MemoryError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT key, vector FROM vectors WHERE kind = ?1 AND model = ?2")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![kind, model], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .map_err(|e| self.err(e))?;
        let mut scored = Vec::new();
        for row in rows {
            let (key, blob) = row.map_err(|e| self.err(e))?;
            scored.push((key, cosine(query, &from_blob(&blob))));
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        Ok(scored.into_iter().take(limit).map(|(k, _)| k).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_and_fusion() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 2.0]), 0.0);
        let fused = fuse(
            &["a".into(), "b".into(), "c".into()],
            &["b".into(), "c".into()],
        );
        assert_eq!(fused[0], "b", "second in both beats first in one");
    }

    #[test]
    fn vectors_round_trip_and_rank() {
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::open(dir.path()).unwrap();
        m.store_vector("episode", "near", "e", &[1.0, 0.1]).unwrap();
        m.store_vector("episode", "far", "e", &[-1.0, 0.0]).unwrap();
        m.store_vector("episode", "other-model", "x", &[1.0, 0.1])
            .unwrap();
        assert_eq!(
            m.nearest("episode", "e", &[1.0, 0.0], 5).unwrap(),
            ["near", "far"]
        );
    }
}
