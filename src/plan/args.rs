//! Decoding of the `plan` tool's JSON arguments.
//!
//! Every field is optional at this stage so that a missing id or title reaches validation
//! and gets its specific error; only malformed JSON or a wrong JSON type is a parse error.

use serde::Deserialize;
use serde_json::{Map, Value};

/// The decoded arguments of one `plan` call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct PlanArgs {
    /// `create`, `update`, `complete` or `get` (missing reads as empty).
    #[serde(default)]
    pub verb: Option<String>,
    /// `create` only: the full ordered step list.
    #[serde(default)]
    pub steps: Option<Vec<Option<NewStep>>>,
    /// `update` only: status/note changes, applied in order.
    #[serde(default)]
    pub updates: Option<Vec<Option<StepUpdate>>>,
    /// `complete` only: the step to mark done.
    #[serde(default)]
    pub step_id: Option<String>,
}

/// One step as `create` receives it, before validation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct NewStep {
    /// Step id (required).
    #[serde(default)]
    pub id: Option<String>,
    /// Step title (required).
    #[serde(default)]
    pub title: Option<String>,
    /// Optional note.
    #[serde(default)]
    pub note: Option<String>,
}

/// One entry of `update`, before validation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct StepUpdate {
    /// Id of an existing step.
    #[serde(default)]
    pub id: Option<String>,
    /// New status token; absent or empty leaves the status alone.
    #[serde(default)]
    pub status: Option<String>,
    /// New note; absent or empty (after normalisation) leaves the note alone.
    #[serde(default)]
    pub note: Option<String>,
}

/// Decodes tool arguments. Objects are required where the schema has objects (serde would
/// otherwise also accept a JSON array positionally); `null` list entries read as empty.
pub fn decode_args(args_json: &str) -> Result<PlanArgs, serde_json::Error> {
    let object: Map<String, Value> = serde_json::from_str(args_json)?;
    for key in ["steps", "updates"] {
        if let Some(Value::Array(items)) = object.get(key) {
            require_object_items(items)?;
        }
    }
    PlanArgs::deserialize(Value::Object(object))
}

fn require_object_items(items: &[Value]) -> Result<(), serde_json::Error> {
    for item in items {
        if !item.is_object() && !item.is_null() {
            // Yields serde's own "invalid type: …, expected a map" wording.
            Map::<String, Value>::deserialize(item)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_every_field() {
        let args = decode_args(
            r#"{"verb":"create","steps":[{"id":"s1","title":"t","note":"n"},null],
               "updates":[{"id":"s1","status":"done"}],"step_id":"s9","extra":1}"#,
        )
        .unwrap();
        assert_eq!(args.verb.as_deref(), Some("create"));
        let steps = args.steps.unwrap();
        assert_eq!(steps[0].as_ref().unwrap().note.as_deref(), Some("n"));
        assert_eq!(steps[1], None);
        assert_eq!(
            args.updates.unwrap()[0].as_ref().unwrap().status.as_deref(),
            Some("done")
        );
        assert_eq!(args.step_id.as_deref(), Some("s9"));
    }

    #[test]
    fn missing_fields_and_nulls_decode_as_absent() {
        let args = decode_args(r#"{"verb":null,"steps":[{"id":null}]}"#).unwrap();
        assert_eq!(args.verb, None);
        assert_eq!(args.steps.unwrap()[0], Some(NewStep::default()));
        assert_eq!(decode_args("{}").unwrap(), PlanArgs::default());
    }

    #[test]
    fn wrong_shapes_are_errors() {
        for bad in [
            "",
            "not json",
            "[]",
            r#"["create"]"#,
            "null",
            "42",
            r#"{"verb":1}"#,
            r#"{"verb":"create","steps":"s1"}"#,
            r#"{"verb":"create","steps":[["s1","t"]]}"#,
            r#"{"verb":"create","steps":["s1"]}"#,
            r#"{"verb":"create","steps":[{"id":1,"title":"t"}]}"#,
            r#"{"verb":"update","updates":{"id":"s1"}}"#,
            r#"{"verb":"update","updates":[{"id":"s1","status":true}]}"#,
            r#"{"verb":"complete","step_id":["s1"]}"#,
            r#"{"verb":"get"} trailing"#,
        ] {
            assert!(decode_args(bad).is_err(), "{bad:?}");
        }
    }
}
