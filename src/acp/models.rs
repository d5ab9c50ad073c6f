//! The session's model in ACP (docs/MODELS.md): `session/new` and `session/load` answer
//! with `models` (`currentModelId`, `availableModels`) and with a `model` config option
//! (category `model`, the schema's selector); `session/set_model` and
//! `session/set_config_option` with `configId: "model"` switch the session, saved at once.

use serde::Deserialize;
use serde_json::{Value, json};

use super::rpc::RpcError;
use super::{Server, decode, lock};
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
fn config_options(offered: &[String]) -> Value {
    let options: Vec<Value> = offered
        .iter()
        .map(|m| json!({"value": m, "name": m}))
        .collect();
    json!([{"id": CONFIG_ID, "name": "Model", "category": "model", "type": "select",
            "currentValue": offered.first(), "options": options}])
}

impl Server {
    /// `session/set_model`: the session's next prompts ask `modelId` (`[PROVIDER:]MODEL`).
    pub(super) fn set_model(&self, params: Value) -> Result<Value, RpcError> {
        let params: SetModel = decode(params)?;
        self.switch(&params.session_id, &params.model_id)?;
        Ok(json!({}))
    }

    /// `session/set_config_option`: `model` is the only option odek has.
    pub(super) fn set_config_option(&self, params: Value) -> Result<Value, RpcError> {
        let params: SetOption = decode(params)?;
        let value = params
            .value
            .as_str()
            .filter(|_| params.config_id == CONFIG_ID);
        let Some(value) = value else {
            return Err(RpcError::invalid_params(format!(
                "no config option {} taking {}: odek has \"model\", a model's name",
                params.config_id, params.value
            )));
        };
        let offered = self.switch(&params.session_id, value)?;
        Ok(json!({"configOptions": config_options(&offered)}))
    }

    /// Switches the session to `model`; the models then offered.
    fn switch(&self, id: &str, model: &str) -> Result<Vec<String>, RpcError> {
        let session = self.session(id)?;
        if lock(&session.run).is_some() {
            return Err(RpcError::invalid_params(format!(
                "session {id} is running a prompt: switch its model when it ends"
            )));
        }
        let runtime = self.runtime_for(session.key.clone())?;
        let wanted = ModelRef::parse(model, runtime.config())
            .map_err(|e| RpcError::invalid_params(e.to_string()))?;
        runtime
            .switch_model(&session.handle, &wanted)
            .map_err(|e| RpcError::invalid_params(e.message_without_paths()))?;
        Ok(runtime.offered_models(Some(&session.handle)))
    }
}
