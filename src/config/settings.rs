//! The table of settings: every key of the configuration, declared once — its dotted path,
//! its kind (with the clamp range of a number), its environment variable and flag, what a
//! project file may do with it, and a one-line description. The field it reads and writes
//! in [`Config`] is named in the same row, and [`Config::default`] holds its default.
//!
//! Everything else is derived from [`SETTINGS`]: the keys a file may hold (unknown ones are
//! warned about), how each layer is read (files, `ODEK_*` variables, flags), how layers merge
//! (a project's changes filtered by the row's rule), the clamps, the templates of `odek
//! init`, the sources `odek config` shows and the key tables of `docs/CONFIG.md` (a test
//! keeps the page equal to [`doc_key_table`] and [`doc_env_table`]).
//!
//! The sections of later features (memory, skills, schedules, sub-agents, the web tools) are
//! added here as rows, nothing more.

use serde_json::Value;

use super::values::Config;

/// What values a setting takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// `true` or `false`.
    Bool,
    /// A non-negative integer, clamped into `range` when one is given.
    Int {
        /// Inclusive bounds.
        range: Option<(u64, u64)>,
    },
    /// A number, clamped into `range`.
    Float {
        /// Inclusive bounds.
        range: (f64, f64),
    },
    /// A string (an empty one counts as unset).
    Text,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A list of strings (a comma list in the environment).
    List,
    /// A list of integers (ids).
    IntList,
    /// One id that may be negative (a Telegram group's chat id); 0 = none.
    Id,
    /// An object whose keys the setting defines (a map of servers, of classes).
    Object,
}

/// What a project file (`./odek.json`, possibly from a cloned repository) may do with a key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Project {
    /// Nothing: it is ignored with a warning.
    Never,
    /// Lower the value of the layers below, never raise it.
    OnlyLower,
    /// Lower a limit where 0 means none: set one where there is none, or a smaller one;
    /// never 0 or a larger one.
    OnlyLowerLimit,
    /// Move the value only towards this one (opt out, tighten): a change away from it is
    /// ignored with a warning.
    OnlyTo(&'static str),
    /// Anything.
    Anything,
}

/// How a layer's value combines with the layers below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// It replaces them.
    Replace,
    /// Lists add up (`tools.disabled`).
    Append,
    /// Object entries are added or replaced one by one (`dangerous.classes`).
    Extend,
}

/// Reads a setting's value from the configuration.
pub type Get = fn(&Config) -> Value;
/// Writes a setting's value into the configuration.
pub type Set = fn(&mut Config, Value) -> Result<(), serde_json::Error>;

/// One row of the table.
pub struct Setting {
    /// Dotted path, e.g. `planning.max_steps`.
    pub key: &'static str,
    /// What values it takes.
    pub kind: Kind,
    /// The `ODEK_*` variable that sets it.
    pub env: Option<&'static str>,
    /// The command-line flag that sets it, for messages.
    pub flag: Option<&'static str>,
    /// What a project file may do with it.
    pub project: Project,
    /// How layers combine.
    pub merge: Merge,
    /// Warned about as this group (`dangerous section`) rather than key by key.
    pub group: Option<&'static str>,
    /// Why a project may not set it, shown in the warning (`a project may only …`).
    pub project_note: Option<&'static str>,
    /// Shown in `odek init --global` instead of the default (JSON text).
    pub template: Option<&'static str>,
    /// In the project template of `odek init`.
    pub in_project_template: bool,
    /// The default as the docs show it, when the value does not say it well.
    pub doc_default: Option<&'static str>,
    /// One line for `docs/CONFIG.md`.
    pub doc: &'static str,
    /// Reads it.
    pub get: Get,
    /// Writes it.
    pub set: Set,
}

/// Reads and writes one field of [`Config`] through serde.
macro_rules! field {
    ($($f:ident).+) => {
        (
            |c: &Config| serde_json::to_value(&c.$($f).+).unwrap_or(Value::Null),
            |c: &mut Config, v: Value| {
                c.$($f).+ = serde_json::from_value(v)?;
                Ok(())
            },
        )
    };
}

/// A row with the common choices: replaced by higher layers, anything from a project.
macro_rules! row {
    ($key:literal, $kind:expr, $($f:ident).+, $doc:literal $(, $name:ident: $value:expr)* $(,)?) => {{
        let (get, set) = field!($($f).+);
        #[allow(clippy::needless_update)]
        Setting {
            $($name: $value,)*
            ..Setting::base($key, $kind, $doc, get, set)
        }
    }};
}

impl Setting {
    const fn base(key: &'static str, kind: Kind, doc: &'static str, get: Get, set: Set) -> Self {
        Setting {
            key,
            kind,
            env: None,
            flag: None,
            project: Project::Anything,
            merge: Merge::Replace,
            group: None,
            project_note: None,
            template: None,
            in_project_template: false,
            doc_default: None,
            doc,
            get,
            set,
        }
    }
}

const ACTIONS: &[&str] = &["allow", "deny", "prompt"];

/// The `providers` example of `odek init --global`: a gateway that speaks Anthropic's
/// Messages (chosen with `--provider my-gateway`).
const PROVIDERS_TEMPLATE: &str = r#"{"my-gateway": {"format": "anthropic", "base_url": "http://127.0.0.1:4000/v1", "api_key": "${MY_GATEWAY_KEY}"}}"#;

/// Every setting, in the order of the templates and the docs.
pub static SETTINGS: std::sync::LazyLock<Vec<Setting>> = std::sync::LazyLock::new(|| {
    use Kind::*;
    use Project::*;
    let int = |min, max| Int {
        range: Some((min, max)),
    };
    let unbounded = Int { range: None };
    vec![
        row!("provider", Text, provider,
            "a provider id: built in (`deepseek`, `anthropic`, `openai`, `openrouter`, `gemini`, `ollama`, `local`) or of `providers`; unset = `base_url` spoken as Chat Completions (see PROVIDERS.md)",
            env: Some("ODEK_PROVIDER"), flag: Some("--provider"), project: Never,
            project_note: Some("a project may not redirect inference"), doc_default: Some("none")),
        row!("providers", Object, providers,
            "custom providers and changes to built-in ones by id: `{format, base_url, api_key, model, headers}` (see PROVIDERS.md)",
            project: Never, merge: Merge::Extend, template: Some(PROVIDERS_TEMPLATE),
            project_note: Some("a project may not redirect inference or read a key")),
        row!("model", Text, model, "model name sent to the endpoint",
            env: Some("ODEK_MODEL"), flag: Some("--model"), in_project_template: true),
        row!("base_url", Text, base_url, "OpenAI-compatible endpoint (must be `http://` or `https://`)",
            env: Some("ODEK_BASE_URL"), flag: Some("--base-url"), project: Never),
        row!("api_key", Text, api_key, "bearer token; fallbacks below. Not needed for loopback endpoints",
            env: Some("ODEK_API_KEY"), project: Never, template: Some(r#""${ODEK_API_KEY}""#)),
        row!("system", Text, system, "replaces the built-in identity (safety rules and runtime context are always appended)",
            env: Some("ODEK_SYSTEM"), flag: Some("--system"), project: Never, template: Some(r#""""#),
            doc_default: Some("built-in prompt")),
        row!("temperature", Float { range: (0.0, 2.0) }, temperature,
            "sampling temperature; omitted = the server's default",
            env: Some("ODEK_TEMPERATURE"), flag: Some("--temperature"), doc_default: Some("omitted")),
        row!("thinking", Choice(super::values::THINKING_LEVELS), thinking,
            "reasoning effort: `enabled`, `disabled`, `low`, `medium`, `high`",
            env: Some("ODEK_THINKING"), flag: Some("--thinking"), doc_default: Some("model profile")),
        row!("max_iterations", int(1, 10_000), max_iterations,
            "model calls per run before the partial summary",
            env: Some("ODEK_MAX_ITER"), flag: Some("--max-iter"), in_project_template: true),
        row!("max_tool_parallel", int(1, 64), max_tool_parallel,
            "tool calls of one batch running at once",
            env: Some("ODEK_MAX_TOOL_PARALLEL")),
        row!("stream", Bool, stream, "stream answers (SSE)",
            env: Some("ODEK_STREAM"), flag: Some("--stream/--no-stream")),
        row!("compaction.enabled", Bool, compaction.enabled,
            "compact the conversation when it fills the context; off, trimming only drops old turns (see COMPACTION.md)",
            env: Some("ODEK_COMPACTION"), flag: Some("--compaction/--no-compaction"), in_project_template: true),
        row!("compaction.mode", Choice(&["digest", "summary"]), compaction.mode,
            "`digest`: the turns trimming drops are summarised into a rolling digest; `summary`: past `at_percent` the model summarises the turns before the last `keep_turns` (the user's messages and the plan kept as they are), falling back to the digest when it fails",
            env: Some("ODEK_COMPACTION_MODE")),
        row!(
            "compaction.at_percent",
            int(10, 100),
            compaction.at_percent,
            "`summary`: percent of the context budget (75 % of the window) at which the summary is made"
        ),
        row!(
            "compaction.keep_turns",
            int(0, 50),
            compaction.keep_turns,
            "user turns a summary (automatic or `/compact`) keeps whole at the end of the conversation"
        ),
        row!("context_window", unbounded, context_window,
            "tokens; 0 = ask the server (`GET /models`, llama-server's `/props`), then the model table",
            env: Some("ODEK_CONTEXT_WINDOW")),
        row!("no_color", Bool, no_color, "no ANSI colours (also `NO_COLOR`)",
            env: Some("ODEK_NO_COLOR"), flag: Some("--no-color")),
        row!("models", List, models,
            "more models the pickers offer beside `model` — the web UI's, the REPL's and Telegram's `/model`, ACP's — (with those the endpoint's `GET /models` lists); `PROVIDER:MODEL` names another provider's (see MODELS.md)",
            env: Some("ODEK_MODELS")),
        row!("fallback_models", List, fallback_models,
            "`PROVIDER:MODEL`s a request goes on with, in order, when its retries are spent on a 429, a 5xx, an overload or a timeout; the next turn starts from `model` again (see FALLBACK.md)",
            env: Some("ODEK_FALLBACK_MODELS"), project: Never,
            project_note: Some("a project may not redirect inference")),
        row!("images", Bool, images,
            "the model takes images: photos sent to the Telegram bot, images attached in the web UI or ACP, and `odek run -i` / `@shot.png` in the terminal go to it as image parts (otherwise photos are saved as files, the other surfaces refuse images, and images already in a session are left out of requests, their text saying how many; docs/IMAGES.md)",
            env: Some("ODEK_IMAGES")),
        row!("raw", Bool, raw,
            "final answers as the model wrote them; otherwise rendered as Markdown on a terminal (never when piped or with `NO_COLOR`)",
            env: Some("ODEK_RAW"), flag: Some("--raw")),
        row!("no_agents", Bool, no_agents, "do not read instruction files (`AGENTS.md`, `CLAUDE.md`, the global one; see INSTRUCTIONS.md)",
            env: Some("ODEK_NO_AGENTS"), flag: Some("--no-agents"), project: OnlyTo("true"),
            project_note: Some("a project may only opt out of AGENTS.md")),
        row!("instructions.fallbacks", List, instructions.fallbacks,
            "file names read in a folder of the instructions chain that has no `AGENTS.md`, the first found wins; plain names, no `/` (see INSTRUCTIONS.md)",
            doc_default: Some(r#"`["CLAUDE.md"]`"#)),
        row!("instructions.max_kb", int(1, 65_536), instructions.max_kb,
            "KiB of instruction files at most, all together; past it the files nearest the working directory are kept and a warning names the rest",
            project: OnlyLower),
        row!("planning.enabled", Bool, planning.enabled, "the plan tool and all plan logic",
            env: Some("ODEK_PLANNING"), flag: Some("--planning/--no-planning"), project: OnlyTo("false"),
            project_note: Some("— planning is disabled in {global}"), in_project_template: true),
        row!("planning.max_steps", int(1, 50), planning.max_steps, "most steps a plan may have",
            env: Some("ODEK_PLANNING_MAX_STEPS"), project: OnlyLower, in_project_template: true),
        row!("planning.max_render_chars", int(200, 8000), planning.max_render_chars,
            "largest rendered plan message in bytes",
            env: Some("ODEK_PLANNING_MAX_RENDER_CHARS"), project: OnlyLower, in_project_template: true),
        row!("planning.placement", Choice(&["tail", "head"]), planning.placement,
            "where requests carry the plan message: `tail` = last message of every request (keeps providers' prompt caches hitting between plan changes), `head` = right after the task, as saved (the seed's request layout)",
            env: Some("ODEK_PLANNING_PLACEMENT"), in_project_template: true),
        row!("dangerous.action", Choice(ACTIONS), dangerous.action,
            "global action for prompt-class calls (`allow` from the environment = `--yolo`)",
            env: Some("ODEK_DANGEROUS_ACTION"), flag: Some("--yolo"), project: Never,
            group: Some("dangerous section"), doc_default: Some("none")),
        row!("dangerous.non_interactive", Choice(&["allow", "deny"]), dangerous.non_interactive,
            "what a `prompt` becomes when there is no terminal",
            project: Never, group: Some("dangerous section"), template: Some(r#""deny""#),
            doc_default: Some("`deny`")),
        row!("dangerous.classes", Object, dangerous.classes,
            "per-class actions, e.g. `{\"network_egress\": \"allow\"}`",
            flag: Some("--allow CLASS"), project: Never, merge: Merge::Extend,
            group: Some("dangerous section")),
        row!("dangerous.allowlist", List, dangerous.allowlist, "exact shell commands always allowed",
            project: Never, group: Some("dangerous section")),
        row!("dangerous.denylist", List, dangerous.denylist, "shell command prefixes always denied",
            project: Never, group: Some("dangerous section")),
        row!("tools.enabled", List, tools.enabled, "when non-empty, only these tools, in this order",
            env: Some("ODEK_TOOLS_ENABLED"), flag: Some("--tool"), project: Never,
            project_note: Some("a project may only disable tools")),
        row!("tools.disabled", List, tools.disabled, "tools never registered (lists from all layers add up)",
            env: Some("ODEK_TOOLS_DISABLED"), flag: Some("--no-tool"), merge: Merge::Append,
            in_project_template: true),
        row!("sessions.autosave", Bool, sessions.autosave,
            "`odek run` saves its transcript unless `--ephemeral`",
            project: Never, group: Some("sessions section")),
        row!("limits.max_runtime_seconds", unbounded, limits.max_runtime_seconds,
            "wall-clock budget per run (0 = off)", flag: Some("--max-runtime"), project: OnlyLowerLimit),
        row!("limits.max_tool_calls", unbounded, limits.max_tool_calls, "tool-call budget per run",
            flag: Some("--max-tool-calls"), project: OnlyLowerLimit),
        row!("limits.max_input_tokens", unbounded, limits.max_input_tokens, "input-token budget per run",
            flag: Some("--max-input-tokens"), project: OnlyLowerLimit),
        row!("limits.max_output_tokens", unbounded, limits.max_output_tokens, "output-token budget per run",
            flag: Some("--max-output-tokens"), project: OnlyLowerLimit),
        row!("limits.max_cost_usd", Float { range: (0.0, 1_000_000.0) }, limits.max_cost_usd,
            "US dollars per run, sub-agents included, at the model's price (`pricing`); a run over it stops like the other budgets (exit 4); 0 = off",
            env: Some("ODEK_MAX_COST_USD"), flag: Some("--max-cost-usd"), project: OnlyLowerLimit),
        row!("hooks", Object, hooks,
            "the user's programs before and after tool calls and at other points, in Claude Code's shape: per event (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop`, `SessionStart`, `SessionEnd`, `Notification`) a list of `{\"matcher\", \"hooks\": [{\"type\": \"command\", \"command\", \"timeout\"}]}`; beside them `fail_open` (a failed guard lets the call through) and `import_claude` (see HOOKS.md)",
            project: Never, merge: Merge::Extend,
            project_note: Some("a project brings hooks in .odek/hooks.json, run once trusted")),
        row!("pricing", Object, pricing,
            "US dollars per million tokens by model prefix, over the built-in prices: `{\"my-model\": {\"input\": 1, \"cached_input\": 0.1, \"cache_write\": 1.25, \"output\": 4}}` (see PROVIDERS.md)",
            project: Never, merge: Merge::Extend, project_note: Some("a project may not change prices")),
        row!("llm.timeout_seconds", int(1, 3600), llm.timeout_seconds,
            "a whole buffered call, or until a stream starts", env: Some("ODEK_LLM_TIMEOUT_SECONDS")),
        row!("llm.stream_idle_timeout_seconds", int(1, 3600), llm.stream_idle_timeout_seconds,
            "longest silence inside a stream", env: Some("ODEK_STREAM_IDLE_TIMEOUT_SECONDS")),
        row!("llm.max_attempts", int(1, 10), llm.max_attempts,
            "attempts per model call (1 = no retries)", env: Some("ODEK_LLM_MAX_ATTEMPTS")),
        row!("llm.retry_initial_delay_ms", int(0, 60_000), llm.retry_initial_delay_ms,
            "wait before the first retry, doubling for each further one (capped at 30 s, plus up to 25 % jitter; a server's `Retry-After` wins)",
            env: Some("ODEK_LLM_RETRY_INITIAL_DELAY_MS")),
        row!("serve.rate_limits.reads_per_minute", int(1, 1_000_000), serve.rate_limits.reads_per_minute,
            "`odek serve`: session list, detail, plan and export reads per minute and client IP",
            project: Never, group: Some("serve section")),
        row!("serve.rate_limits.prompts_per_minute", int(1, 1_000_000), serve.rate_limits.prompts_per_minute,
            "`odek serve`: `POST /api/prompt` per minute and client IP",
            project: Never, group: Some("serve section")),
        row!("telegram.api_base", Text, telegram.api_base, "the Bot API's address (`odek telegram`)",
            project: Never, group: Some("telegram section")),
        row!("telegram.bot_token", Text, telegram.bot_token,
            "the bot's token from @BotFather; masked by `odek config`, redacted everywhere, hidden from shell commands",
            env: Some("ODEK_TELEGRAM_TOKEN"), project: Never, group: Some("telegram section"),
            template: Some(r#""${ODEK_TELEGRAM_TOKEN}""#)),
        row!("telegram.allowed_users", IntList, telegram.allowed_users,
            "Telegram user ids whose messages start turns; the bot refuses to start while this and `allowed_chats` are both empty",
            project: Never, group: Some("telegram section")),
        row!("telegram.allowed_chats", IntList, telegram.allowed_chats,
            "chat ids (groups too) whose messages start turns", project: Never, group: Some("telegram section")),
        row!("telegram.poll_timeout", int(1, 50), telegram.poll_timeout,
            "seconds one `getUpdates` long poll waits", project: Never, group: Some("telegram section")),
        row!("telegram.session_ttl_hours", unbounded, telegram.session_ttl_hours,
            "a chat silent this long starts a new session with its next message; 0 = never",
            project: Never, group: Some("telegram section")),
        row!("telegram.default_chat_id", Id, telegram.default_chat_id,
            "where a `telegram` delivery goes (schedules, `run --deliver telegram`); 0 = none",
            env: Some("ODEK_TELEGRAM_CHAT_ID"), project: Never, group: Some("telegram section")),
        row!("telegram.admin_users", IntList, telegram.admin_users,
            "Telegram user ids who may add and remove schedules with `/schedule`",
            project: Never, group: Some("telegram section")),
        row!("telegram.daily_token_budget", unbounded, telegram.daily_token_budget,
            "tokens (in and out) each chat's turns may use per day (UTC); a chat over it is told so politely; 0 = no limit",
            env: Some("ODEK_TELEGRAM_DAILY_TOKEN_BUDGET"), project: Never, group: Some("telegram section")),
        Setting {
            template: Some(MCP_TEMPLATE),
            ..Setting::base(
                "mcp_servers",
                Object,
                "MCP servers by name: `{command, args, env}` (stdio) or `{url, headers}` (streamable HTTP), plus `timeout_seconds` (30, 1..600), `auto_approve` and `disabled`; a project may only disable one (see MCP.md)",
                |c| serde_json::to_value(&c.mcp_servers).unwrap_or(Value::Null),
                // Merged by its own rule (`layers::Merger::apply_mcp`), never through here.
                |_, _| Ok(()),
            )
        },
        row!("sandbox", Bool, sandbox,
            "run shell commands in the sandbox (Landlock on Linux, Seatbelt on macOS) where the system offers it (see SANDBOX.md)",
            env: Some("ODEK_SANDBOX"), flag: Some("--sandbox/--no-sandbox"), project: OnlyTo("true"),
            project_note: Some("a project may only turn the sandbox on")),
        row!("sandbox_required", Bool, sandbox_required,
            "where the sandbox is on but this system offers none, refuse shell commands (and a project's hooks) instead of running them without it",
            env: Some("ODEK_SANDBOX_REQUIRED"), project: OnlyTo("true"),
            project_note: Some("a project may only require the sandbox")),
        row!("sandbox_allow_write", List, sandbox_allow_write,
            "more paths sandboxed commands may write beneath, e.g. `[\"~/.cargo\"]` (`~/` is the home directory)",
            project: Never, project_note: Some("a project may not widen the sandbox")),
        row!("sandbox_network", Choice(&["allow", "none"]), sandbox_network,
            "`none` also refuses TCP connect and bind to sandboxed commands (Linux: Landlock ABI 4+, UDP not covered; macOS: every socket but local ones)",
            env: Some("ODEK_SANDBOX_NETWORK"), project: OnlyTo("\"none\""),
            project_note: Some("a project may only shut the network")),
        row!("subagents.enabled", Bool, subagents.enabled,
            "the `delegate_tasks` tool (never inside a sub-agent)",
            env: Some("ODEK_SUBAGENTS"), flag: Some("--no-subagents"), project: OnlyTo("false"),
            project_note: Some("a project may only turn sub-agents off")),
        row!("subagents.max_concurrency", int(1, 8), subagents.max_concurrency,
            "sub-agents running at once", project: OnlyLower),
        row!("subagents.timeout_seconds", int(10, 3600), subagents.timeout_seconds,
            "wall-clock limit of one sub-agent", project: OnlyLower),
        row!("subagents.max_iter", int(1, 100), subagents.max_iter,
            "model calls one sub-agent may make", project: OnlyLower),
        row!("checkpoints.enabled", Bool, checkpoints.enabled,
            "the file tools record what they change so `odek rewind` can put it back (see UNDO.md)",
            env: Some("ODEK_CHECKPOINTS"), project: OnlyTo("true"),
            project_note: Some("a project may not turn checkpoints off")),
        row!("checkpoints.max_file_mb", int(1, 1024), checkpoints.max_file_mb,
            "files above this many MiB are not captured (the checkpoint lists them as not covered)",
            project: Never, project_note: Some("a project may not shrink what is captured")),
        row!("checkpoints.max_files", int(100, 1_000_000), checkpoints.max_files,
            "git work trees above this many files are not snapshotted before a shell command (its checkpoint says so)",
            project: Never, project_note: Some("a project may not shrink what is captured")),
        row!("checkpoints.keep_days", int(1, 3650), checkpoints.keep_days,
            "checkpoints older than this many days are removed (once a day, when a run starts)",
            project: Never, project_note: Some("a project may not change how long checkpoints are kept")),
        row!("checkpoints.max_mb", int(10, 1_048_576), checkpoints.max_mb,
            "the stored pre-images may take this many MiB; beyond it the oldest checkpoints go first",
            project: Never, project_note: Some("a project may not change how much checkpoints keep")),
        row!("background.output_kb", int(4, 65_536), background.output_kb,
            "output each background job keeps: its last this many KiB, read by offset (see BACKGROUND.md)",
            project: OnlyLower),
        row!("background.max_jobs", int(0, 16), background.max_jobs,
            "background jobs running at once; 0 turns `shell`'s `background` and the `background` tool off",
            project: OnlyLower),
        row!("background.max_seconds", int(10, 86_400), background.max_seconds,
            "a background job's wall time before it is stopped",
            project: OnlyLower),
        row!("memory.enabled", Bool, memory.enabled,
            "facts across sessions (the memory block, the `memory` tool), `session_search`, episodes (see MEMORY.md)",
            env: Some("ODEK_MEMORY"), flag: Some("--no-memory"), project: OnlyTo("false"),
            project_note: Some("a project may only turn memory off")),
        row!("memory.user_max_chars", int(100, 20_000), memory.user_max_chars,
            "character budget of the `user` fact store", project: OnlyLower),
        row!("memory.project_max_chars", int(100, 20_000), memory.project_max_chars,
            "character budget of each project's fact store", project: OnlyLower),
        row!("memory.episodes", Bool, memory.episodes,
            "a summary of each session with 3+ user turns (one side call per 3 new turns), recalled at the start of related sessions",
            env: Some("ODEK_MEMORY_EPISODES"), project: OnlyTo("false"),
            project_note: Some("a project may only turn episodes off")),
        row!("memory.embeddings.base_url", Text, memory.embeddings.base_url,
            "an OpenAI-compatible `/v1/embeddings` endpoint: ranking becomes hybrid (BM25 + cosine); empty = lexical",
            env: Some("ODEK_EMBEDDINGS_URL"), project: Never, group: Some("memory.embeddings section"),
            doc_default: Some("none")),
        row!("memory.embeddings.model", Text, memory.embeddings.model,
            "the embedding model", project: Never, group: Some("memory.embeddings section"),
            doc_default: Some("none")),
        row!("memory.embeddings.api_key", Text, memory.embeddings.api_key,
            "the embeddings endpoint's key, when it is not the model endpoint (whose key goes only to the same origin); masked, redacted, hidden from shell commands",
            env: Some("ODEK_EMBEDDINGS_API_KEY"), project: Never, group: Some("memory.embeddings section"),
            doc_default: Some("none")),
        row!("skills.enabled", Bool, skills.enabled,
            "the skills block, `skill_load` and `skill_list` (see SKILLS.md)",
            env: Some("ODEK_SKILLS"), flag: Some("--no-skills"), project: OnlyTo("false"),
            project_note: Some("a project may only turn skills off")),
        row!("skills.dirs", List, skills.dirs,
            "more folders of skills, searched after `<home>/skills` and the project's (`~/` is the home directory)",
            project: Never, project_note: Some("a project may not add skill folders")),
        row!("skills.max_listed", int(0, 500), skills.max_listed,
            "skills named in the skills block at most; the rest are counted (`skill_list` shows them)",
            project: OnlyLower),
        row!("skills.max_auto_chars", int(0, 100_000), skills.max_auto_chars,
            "characters of `odek.auto_load` skill bodies in the skills block at most, all together",
            project: OnlyLower),
        row!("commands.import_claude", Bool, commands.import_claude,
            "also read the project's `.claude/commands/` as custom slash commands (see COMMANDS.md)",
            project: OnlyTo("false"), project_note: Some("a project may only turn the import off")),
        row!("schedules.runner", Choice(&["any", "daemon", "off"]), schedules.runner,
            "who runs due jobs: `any` (`odek schedule daemon`, `odek serve` or `odek telegram`, whichever holds the home's lock), `daemon` (only the daemon), `off` (see SCHEDULES.md)",
            project: Never),
        row!("schedules.dangerous", List, schedules.dangerous,
            "danger classes every scheduled turn may run with nobody to ask (a job adds its own with `--allow`); the rest is denied",
            project: Never, project_note: Some("a project may not widen what schedules run")),
        row!("schedules.max_concurrent", int(1, 8), schedules.max_concurrent,
            "scheduled jobs running at once", project: Never),
        row!("schedules.delivery_retry_ms", int(10, 60_000), schedules.delivery_retry_ms,
            "the wait before a failed delivery is tried again (doubled each time; 3 retries)",
            project: Never),
        row!("web.allow_hosts", List, web.allow_hosts,
            "hosts `web_fetch` reads without asking: `docs.rs` or `*.python.org` (its subdomains); `host:port` names that port only",
            project: Never, group: Some("web section")),
        row!("web.allow_private_hosts", List, web.allow_private_hosts,
            "hosts `web_fetch` may reach on loopback, private, link-local or CGNAT addresses (e.g. a local docs server); `host:port` names that port only",
            project: Never, group: Some("web section")),
        row!("web.timeout_seconds", int(1, 300), web.timeout_seconds,
            "one `web_fetch`, redirects and body included", project: OnlyLower),
        row!("web_search.base_url", Text, web_search.base_url,
            "a SearXNG instance (JSON format on); empty = no `web_search` tool",
            env: Some("ODEK_WEB_SEARCH_URL"), project: Never, group: Some("web_search section"),
            doc_default: Some("none")),
        row!("web_search.max_results", int(1, 20), web_search.max_results,
            "results per search unless the call asks for fewer", project: OnlyLower),
        row!("web_search.timeout_seconds", int(1, 300), web_search.timeout_seconds,
            "one search", project: OnlyLower),
        row!("web_search.language", Text, web_search.language,
            "SearXNG's `language` (e.g. `en`); empty = the instance's default",
            doc_default: Some("none")),
        row!("web_search.categories", Text, web_search.categories,
            "SearXNG's `categories` (e.g. `general,it`); empty = the instance's default",
            doc_default: Some("none")),
        row!("browser.enabled", Bool, browser.enabled,
            "the `browser` tool, offered when a Chromium or Chrome is found (see TOOLS.md)",
            env: Some("ODEK_BROWSER"), project: OnlyTo("false"),
            project_note: Some("a project may only turn the browser off")),
        row!("browser.executable", Text, browser.executable,
            "the Chromium or Chrome program: a path, or a name looked up on PATH; empty = the first of `chromium`, `chromium-browser`, `google-chrome`, `google-chrome-stable`, `chrome` on PATH (and the macOS app paths)",
            env: Some("ODEK_BROWSER_EXECUTABLE"), project: Never,
            project_note: Some("a project may not choose a program odek runs"), doc_default: Some("none")),
        row!("browser.allow_local", Choice(&["none", "loopback", "private"]), browser.allow_local,
            "addresses the browser's pages reach without `web.allow_private_hosts`: `loopback` (a dev server on this machine), `private` (also 10/8, 172.16/12, 192.168/16, fc00::/7), `none`; each action waits at most `web.timeout_seconds`",
            project: OnlyTo("\"none\""), project_note: Some("a project may only narrow it to `none`")),
    ]
});

/// The MCP servers `odek init --global` shows, both switched off.
const MCP_TEMPLATE: &str = r#"{
  "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {}, "timeout_seconds": 30, "auto_approve": ["echo"], "disabled": true},
  "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${MCP_EXAMPLE_TOKEN}"}, "timeout_seconds": 30, "auto_approve": [], "disabled": true}
}"#;

/// Sections whose other keys are accepted and ignored (keys of the Go original odek does
/// not use, such as `telegram.poll_interval`).
pub const TOLERATED_SECTIONS: &[&str] = &["telegram"];

/// The row of `key`.
pub fn setting(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

impl Setting {
    /// The JSON pointer of the key (`/planning/max_steps`).
    pub fn pointer(&self) -> String {
        format!("/{}", self.key.replace('.', "/"))
    }

    /// The default value.
    pub fn default_value(&self) -> Value {
        (self.get)(&Config::default())
    }

    /// The value `odek init --global` writes.
    pub fn template_value(&self) -> Value {
        self.template
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_else(|| self.default_value())
    }

    /// The clamp range of a number (as text for messages).
    pub fn range_text(&self) -> Option<String> {
        match self.kind {
            Kind::Int {
                range: Some((min, max)),
            } => Some(format!("{min}..{max}")),
            Kind::Float { range: (min, max) } => Some(format!("{min}..{max}")),
            _ => None,
        }
    }

    /// Parses the value of its environment variable.
    pub fn parse_env(&self, text: &str) -> Result<Value, Expected> {
        let text = text.trim();
        match self.kind {
            Kind::Bool => super::env::parse_bool(text)
                .map(Value::Bool)
                .ok_or(Expected::Bool),
            Kind::Int { range } => text
                .parse::<u64>()
                .map(Value::from)
                .map_err(|_| match range {
                    Some((min, _)) if min >= 1 => Expected::PositiveInt,
                    _ => Expected::NonNegativeInt,
                }),
            Kind::Float { .. } => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or(Expected::Number),
            Kind::Choice(options) => {
                let word = text.to_ascii_lowercase();
                if options.contains(&word.as_str()) {
                    Ok(Value::String(word))
                } else {
                    Err(Expected::OneOf(options))
                }
            }
            Kind::List => Ok(Value::from(
                text.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>(),
            )),
            Kind::Text => Ok(Value::String(text.to_string())),
            Kind::Id => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| Expected::Id),
            Kind::IntList | Kind::Object => Err(Expected::FileOnly),
        }
    }
}

/// What an environment variable should have held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Expected {
    /// A boolean word.
    #[error("a boolean (true/false, 1/0, yes/no, on/off)")]
    Bool,
    /// 1 or more.
    #[error("a positive integer")]
    PositiveInt,
    /// 0 or more.
    #[error("a non-negative integer")]
    NonNegativeInt,
    /// An integer id (possibly negative).
    #[error("an integer id")]
    Id,
    /// Any number.
    #[error("a number")]
    Number,
    /// One of these words.
    #[error("{}", one_of(.0))]
    OneOf(&'static [&'static str]),
    /// Nothing: only a file sets it.
    #[error("a value only a file sets")]
    FileOnly,
}

impl crate::error::Classified for Expected {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }

    fn hint(&self) -> Option<&'static str> {
        Some(SETTINGS_HINT)
    }
}

/// Where the settings, their values and their sources are told.
pub const SETTINGS_HINT: &str = "docs/CONFIG.md lists each setting and its values; odek config shows where each value comes from";

/// `a, b or c`.
pub fn one_of(options: &[&str]) -> String {
    match options.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The key table of `docs/CONFIG.md`: key, default, meaning (with the clamp range).
pub fn doc_key_table() -> String {
    let mut out = String::from("| key | default | meaning |\n|---|---|---|\n");
    for s in SETTINGS.iter() {
        let default = s
            .doc_default
            .map_or_else(|| doc_value(&s.default_value()), str::to_string);
        let mut meaning = s.doc.to_string();
        if let Some(range) = s.range_text() {
            meaning.push_str(&format!("; clamped to {range}"));
        }
        if s.project == Project::Never {
            meaning.push_str("; not from a project file");
        }
        out.push_str(&format!("| `{}` | {default} | {meaning} |\n", s.key));
    }
    out
}

/// The environment table of `docs/CONFIG.md`.
pub fn doc_env_table() -> String {
    let mut out = String::from("| variable | key |\n|---|---|\n");
    out.push_str("| `ODEK_HOME` | the home directory (default `~/.odek`) |\n");
    for s in SETTINGS.iter() {
        if let Some(var) = s.env {
            out.push_str(&format!("| `{var}` | `{}` |\n", s.key));
        }
    }
    out.push_str("| `NO_COLOR` (any value) | `no_color` |\n");
    out.push_str("| `DEEPSEEK_API_KEY`, `OPENAI_API_KEY` | `api_key` fallbacks when no provider is named |\n");
    out.push_str("| `ANTHROPIC_API_KEY`, `OPENROUTER_API_KEY`, `GEMINI_API_KEY` | the key of the provider `anthropic`, `openrouter`, `gemini` (before `api_key`) |\n");
    out
}

fn doc_value(value: &Value) -> String {
    match value {
        Value::Null => "none".into(),
        Value::String(s) => format!("`{s}`"),
        Value::Array(a) if a.is_empty() => "`[]`".into(),
        Value::Object(o) if o.is_empty() => "`{}`".into(),
        other => other.to_string(),
    }
}
