//! The one function that builds a runtime — model client, tool registry with the shared plan
//! store, approval gate, engine — for every entry point, so `run`, `continue`, `repl` and the
//! later servers can never drift apart in what they register.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, is_loopback_url};
use crate::engine::{Budgets, Engine, EngineEvent, EngineParts, EngineSettings, Observer};
use crate::llm::{ChatModel, HttpModel, HttpModelConfig, RecordingModel, ReplayModel};
use crate::plan::{ChangeCallback, PlanLimits, PlanStore};
use crate::redact::Redactor;
use crate::tools::approval::{Approver, Gate};
use crate::tools::{ToolSelection, build_registry};

/// Where the model's answers come from.
#[derive(Debug, Clone, Default)]
pub enum ModelSource {
    /// The configured OpenAI-compatible endpoint.
    #[default]
    Http,
    /// A recorded file (`--replay`).
    Replay(PathBuf),
}

/// Everything the builder needs besides the configuration.
pub struct RuntimeOptions {
    /// The odek home, for messages that point at the config file.
    pub home: PathBuf,
    /// Working directory of the tools.
    pub cwd: PathBuf,
    /// HTTP endpoint or replay file.
    pub model_source: ModelSource,
    /// Also append every answer to this file (`--record`).
    pub record: Option<PathBuf>,
    /// Who hears about the run (terminal, event stream).
    pub observer: Arc<dyn Observer>,
    /// Asks the user about dangerous calls; `None` = non-interactive.
    pub approver: Option<Arc<dyn Approver>>,
    /// Redaction of secrets in tool output.
    pub redactor: Arc<Redactor>,
    /// Told about every effective plan change (the event stream hooks in here).
    pub on_plan_change: Option<ChangeCallback>,
}

/// Why a runtime could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// No key for a remote endpoint.
    #[error(
        "no API key provided for {base_url} (set ODEK_API_KEY, DEEPSEEK_API_KEY or OPENAI_API_KEY, or api_key in {config})"
    )]
    MissingApiKey {
        /// The endpoint.
        base_url: String,
        /// The global config file.
        config: String,
    },
    /// The model client could not be created.
    #[error("{0}")]
    Model(#[from] crate::llm::LlmError),
    /// The tool selection names unknown tools.
    #[error("{0}")]
    Tools(String),
}

/// Builds the engine for this configuration.
pub fn build_runtime(config: &Config, opts: RuntimeOptions) -> Result<Engine, RuntimeError> {
    let global_config = opts
        .home
        .join(crate::config::GLOBAL_FILE)
        .display()
        .to_string();
    let model = build_model(config, &opts, &global_config)?;
    let selection = ToolSelection {
        enabled: config.tools.enabled.clone(),
        disabled: config.tools.disabled.clone(),
    };
    let plan = build_plan_store(config, &selection, opts.on_plan_change);
    let tools = build_registry(&selection, plan.clone()).map_err(RuntimeError::Tools)?;
    let gate = Gate::new(config.dangerous.clone(), opts.approver, &global_config);
    Ok(Engine::new(EngineParts {
        model,
        tools: Arc::new(tools),
        gate: Arc::new(gate),
        plan,
        redactor: opts.redactor,
        observer: opts.observer,
        settings: EngineSettings {
            max_iterations: config.max_iterations,
            max_tool_parallel: config.max_tool_parallel as usize,
            stream: config.stream,
            budgets: Budgets {
                max_runtime_seconds: config.limits.max_runtime_seconds,
                max_tool_calls: config.limits.max_tool_calls,
                max_input_tokens: config.limits.max_input_tokens,
                max_output_tokens: config.limits.max_output_tokens,
            },
            cwd: opts.cwd,
            context_window: config.context_window,
            compaction: config.compaction,
        },
    }))
}

/// Planning is on when the configuration enables it and the tool selection keeps `plan`;
/// otherwise there is no store at all (and so no plan logic anywhere).
fn build_plan_store(
    config: &Config,
    selection: &ToolSelection,
    on_change: Option<ChangeCallback>,
) -> Option<Arc<PlanStore>> {
    if !config.planning.enabled || !selection.keeps(crate::plan::TOOL_NAME) {
        return None;
    }
    let store = PlanStore::new(PlanLimits {
        max_steps: config.planning.max_steps as usize,
        max_render_chars: config.planning.max_render_chars as usize,
    });
    if let Some(f) = on_change {
        store.set_on_change(f);
    }
    Some(Arc::new(store))
}

fn build_model(
    config: &Config,
    opts: &RuntimeOptions,
    global_config: &str,
) -> Result<Arc<dyn ChatModel>, RuntimeError> {
    let inner: Box<dyn ChatModel> = match &opts.model_source {
        ModelSource::Replay(path) => Box::new(ReplayModel::load(path)?),
        ModelSource::Http => Box::new(http_model(config, opts.observer.clone(), global_config)?),
    };
    Ok(match &opts.record {
        Some(path) => Arc::new(RecordingModel::create(BoxedModel(inner), path.clone())?),
        None => Arc::from(inner),
    })
}

fn http_model(
    config: &Config,
    observer: Arc<dyn Observer>,
    global_config: &str,
) -> Result<HttpModel, RuntimeError> {
    if config.api_key.is_none() && !is_loopback_url(&config.base_url) {
        return Err(RuntimeError::MissingApiKey {
            base_url: config.base_url.clone(),
            config: global_config.to_string(),
        });
    }
    let mut http = HttpModelConfig::new(config.base_url.clone(), config.model.clone());
    http.api_key = config.api_key.clone();
    http.temperature = config.temperature;
    if config.thinking.is_some() {
        http.thinking = config.thinking.clone();
    }
    http.request_timeout = Duration::from_secs(config.llm.timeout_seconds);
    http.stream_idle_timeout = Duration::from_secs(config.llm.stream_idle_timeout_seconds);
    http.max_attempts = config.llm.max_attempts;
    http.on_retry = Some(Arc::new(move |n: &crate::llm::RetryNotice| {
        observer.on_event(&EngineEvent::ModelRetry {
            attempt: n.attempt,
            max_attempts: n.max_attempts,
            wait: n.wait,
            reason: &n.reason,
        });
    }));
    Ok(HttpModel::new(http)?)
}

/// Lets a boxed model be wrapped by the generic recorder.
struct BoxedModel(Box<dyn ChatModel>);

#[async_trait::async_trait]
impl ChatModel for BoxedModel {
    fn model_name(&self) -> &str {
        self.0.model_name()
    }

    async fn complete(
        &self,
        request: &crate::llm::ChatRequest<'_>,
        on_delta: Option<crate::llm::DeltaSink<'_>>,
    ) -> Result<crate::llm::ChatResponse, crate::llm::LlmError> {
        self.0.complete(request, on_delta).await
    }

    async fn context_window(&self) -> Option<u64> {
        self.0.context_window().await
    }
}

/// The redactor for this process: the configured API key and every secret-looking
/// environment value, plus the built-in patterns.
pub fn build_redactor(config: &Config) -> Arc<Redactor> {
    let mut r = Redactor::new();
    if let Some(key) = &config.api_key {
        r.add_secret(key);
    }
    r.add_secrets_from_env(std::env::vars());
    Arc::new(r)
}
