//! The session's model in ACP (docs/MODELS.md): `session/new` and `session/load` answer
//! with `models` (`currentModelId`, `availableModels`) and with a `model` config option
//! (category `model`, the schema's selector); `session/set_model` and
//! `session/set_config_option` with `configId: "model"` switch the session, saved at once.

use serde::Deserialize;
use serde_json::{Value, json};

use super::rpc::RpcError;
use crate::config::ModelRef;
use crate::runtime::{Runtime, SessionHandle};

/// The id of the model's config option.
const CONFIG_ID: &str = "model";

/// `session/set_model`'s params.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SetModel {
    session_id: String,
    model_id: String,
}

/// `session/set_config_option`'s params.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SetOption {
    session_id: String,
    config_id: String,
    value: Value,
}

/// Adds `models` and `configOptions` of `handle` on `runtime` to an answer.
pub(super) fn add_to(answer: &mut Value, runtime: &Runtime, handle: &SessionHandle) {
    let offered = runtime.offered_models(Some(handle));
    let current = offered.first().cloned().unwrap_or_default();
    let available: Vec<Value> = offered
        .iter()
        .map(|m| json!({"modelId": m, "name": m}))
        .collect();
    answer["models"] = json!({"currentModelId": current, "availableModels": available});
    answer["configOptions"] = config_options(&offered);
}

/// The `model` select option, the session's model current.
pub(super) fn config_options(offered: &[String]) -> Value {
    let options: Vec<Value> = offered
        .iter()
        .map(|m| json!({"value": m, "name": m}))
        .collect();
    json!([{"id": CONFIG_ID, "name": "Model", "category": "model", "type": "select",
            "currentValue": offered.first(), "options": options}])
}

/// The session and the model a `session/set_model` (or, `as_option`, a
/// `session/set_config_option`) asks for.
pub(super) fn wanted(params: Value, as_option: bool) -> Result<(String, String), RpcError> {
    let invalid = |e: serde_json::Error| RpcError::invalid_params(format!("invalid params: {e}"));
    if !as_option {
        let p: SetModel = serde_json::from_value(params).map_err(invalid)?;
        return Ok((p.session_id, p.model_id));
    }
    let p: SetOption = serde_json::from_value(params).map_err(invalid)?;
    match p.value.as_str().filter(|_| p.config_id == CONFIG_ID) {
        Some(model) => Ok((p.session_id, model.to_string())),
        None => Err(RpcError::invalid_params(format!(
            "no config option {} taking {}: odek has \"model\", a model's name",
            p.config_id, p.value
        ))),
    }
}

/// Switches `handle` on `runtime` to `model`; the models then offered.
pub(super) fn switch(
    runtime: &Runtime,
    handle: &SessionHandle,
    model: &str,
) -> Result<Vec<String>, RpcError> {
    let wanted = ModelRef::parse(model, runtime.config())
        .map_err(|e| RpcError::invalid_params(e.to_string()))?;
    runtime
        .switch_model(handle, &wanted)
        .map_err(|e| RpcError::invalid_params(e.message_without_paths()))?;
    Ok(runtime.offered_models(Some(handle)))
}
