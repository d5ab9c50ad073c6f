//! odek inside editors: the Agent Client Protocol (`odek acp`), JSON-RPC 2.0 over stdin and
//! stdout, logs on stderr. See docs/ACP.md.
//!
//! A surface like the others: each prompt is a turn of an odek session (`origin: "acp"`)
//! submitted to the process's supervisor; the surface brings its approver
//! ([`approver::AcpApprover`], `session/request_permission`) and its output
//! ([`updates::Updates`], `session/update`). Several sessions run at once over one
//! connection. Requests are handled each on its own task, so a `session/cancel` or the
//! client's answer to a permission request is read while a prompt runs.

mod approver;
mod commands;
mod files;
mod input;
mod mcp;
mod models;
mod modes;
mod replay;
mod rpc;
mod updates;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::config::LoadOptions;
use crate::danger_policy::DangerClass;
use crate::engine::{AnswerCut, RunError, RunOutcome};
use crate::runtime::{
    Approvals, Runtime, RuntimeOptions, SessionHandle, Submission, Supervisor, TurnScope,
};
use rpc::{Connection, Incoming, Line, RpcError, code};

/// Origin of the sessions `odek acp` starts.
pub const ORIGIN_ACP: &str = "acp";

/// Who holds the sessions `odek acp` writes.
const HOLDER: &str = "odek acp";

/// The protocol version odek speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// The id of the one authentication method: where the key goes.
const AUTH_METHOD: &str = "odek-api-key";

/// What the server runs turns with.
pub struct Backend {
    /// The runtime of the directory `odek acp` started in.
    pub base: Arc<Runtime>,
    /// The process's supervisor.
    pub supervisor: Supervisor,
    /// How the configuration was loaded (for another directory or a session's model).
    pub load: LoadOptions,
}

/// A session this connection holds.
struct AcpSession {
    /// Its directory, model and endpoint (the mode aside).
    key: RuntimeKey,
    /// Its mode (`session/set_mode`): the next prompt's policy.
    mode: Mutex<modes::Mode>,
    handle: Arc<SessionHandle>,
    /// The classes the user rejected for the rest of the session.
    rejected: Arc<Mutex<HashSet<DangerClass>>>,
    /// The run of the prompt in progress.
    run: Mutex<Option<String>>,
}

impl AcpSession {
    /// Submits the prompt's turn unless one is running; names the session by its first
    /// prompt.
    fn start(
        &self,
        supervisor: &Supervisor,
        submission: Submission,
        title: &str,
    ) -> Result<crate::runtime::RunHandle, RpcError> {
        let mut run = lock(&self.run);
        if run.is_some() {
            return Err(RpcError::new(
                code::INVALID_REQUEST,
                format!("session {} is already running a prompt", self.handle.id()),
            ));
        }
        if self.handle.saved().task.is_empty() {
            self.handle.set_task(title);
        }
        let handle = supervisor
            .submit(submission)
            .map_err(|e| RpcError::internal(e.to_string()))?;
        *run = Some(handle.run_id.clone());
        Ok(handle)
    }
}

/// Which runtime: a directory, a model and its endpoint (a session's mode is its turns'
/// scope, not a runtime's).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct RuntimeKey {
    cwd: PathBuf,
    model: String,
    base_url: String,
    /// The provider (its wire and key).
    provider: Option<String>,
    /// The client's MCP servers of the session ([`Server::client_servers`]; 0: none).
    servers: u64,
}

struct Server {
    conn: Arc<Connection>,
    /// The backend, or why there is none (no API key: `authenticate` says where it goes).
    backend: Result<Backend, crate::runtime::RuntimeError>,
    initialized: AtomicBool,
    /// What the client does with files (from `initialize`).
    files: Mutex<files::FileCapabilities>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    runtimes: Mutex<HashMap<RuntimeKey, Arc<Runtime>>>,
    /// The MCP servers clients passed, by the number sessions' keys carry.
    client_servers: Mutex<HashMap<u64, Vec<mcp::ClientServer>>>,
    /// Requests being answered.
    busy: AtomicUsize,
    /// Counts the times the connection fell idle: a release waits for its own.
    idle_since: AtomicU64,
}

/// How long the connection stays idle before the binary's code pages are given back
/// ([`crate::code_pages`]): an editor sends the requests of one action close together.
const RELEASE_CODE_PAGES_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Serves ACP on `input` and `output` until the input ends; then cancels the prompts still
/// running (saved as every cancelled turn is) and returns.
pub async fn serve(
    backend: Result<Backend, crate::runtime::RuntimeError>,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_lines(rx, output));
    let server = Arc::new(Server {
        conn: Connection::new(tx),
        backend,
        initialized: AtomicBool::new(false),
        files: Mutex::default(),
        sessions: Mutex::new(HashMap::new()),
        runtimes: Mutex::new(HashMap::new()),
        client_servers: Mutex::new(HashMap::new()),
        busy: AtomicUsize::new(0),
        idle_since: AtomicU64::new(0),
    });
    let mut input = tokio::io::BufReader::new(input);
    loop {
        match rpc::read_line(&mut input, rpc::MAX_LINE_BYTES).await {
            Ok(Line::Text(line)) if line.iter().all(u8::is_ascii_whitespace) => {}
            Ok(Line::Text(line)) => server.take(&line),
            Ok(Line::TooLong) => server.conn.respond(
                Value::Null,
                Err(RpcError::new(
                    code::INVALID_REQUEST,
                    format!("a message may hold at most {} bytes", rpc::MAX_LINE_BYTES),
                )),
            ),
            Ok(Line::End) => break,
            Err(e) => {
                tracing::warn!("odek acp: reading stdin: {e}");
                break;
            }
        }
    }
    server.conn.close();
    if let Ok(backend) = &server.backend {
        backend.supervisor.shutdown().await;
    }
    // The clients' MCP servers stop with the connection (odek's own with the process).
    let own: Vec<Arc<Runtime>> = lock(&server.runtimes)
        .iter()
        .filter(|(key, _)| key.servers != 0)
        .map(|(_, runtime)| runtime.clone())
        .collect();
    for runtime in own {
        runtime.mcp().shutdown().await;
    }
    lock(&server.sessions).clear();
    drop(server);
    // Every sender is gone once the runs have ended: the writer drains what is left.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
}

async fn write_lines(
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    mut output: impl AsyncWrite + Unpin,
) {
    while let Some(line) = rx.recv().await {
        if output.write_all(&line).await.is_err() {
            return;
        }
        // Flush when nothing else is waiting: a burst of deltas goes out in one write.
        if rx.is_empty() && output.flush().await.is_err() {
            return;
        }
    }
}

impl Server {
    /// Takes one line: a request gets its answer on its own task.
    fn take(self: &Arc<Self>, line: &[u8]) {
        match rpc::parse(line) {
            Incoming::Request { id, method, params } if method == "initialize" => {
                let answer = self.initialize(&params);
                self.conn.respond(id, answer);
                self.fell_idle();
            }
            Incoming::Request { id, .. } if !self.initialized.load(Ordering::Acquire) => {
                self.conn.respond(
                    id,
                    Err(RpcError::new(
                        code::INVALID_REQUEST,
                        "not initialized: send initialize first",
                    )),
                );
            }
            Incoming::Request { id, method, params } => {
                let server = self.clone();
                self.busy.fetch_add(1, Ordering::AcqRel);
                tokio::spawn(async move {
                    let loading = params.get("sessionId").and_then(Value::as_str);
                    let loading = loading.map(str::to_string);
                    let answer = server.call(&method, params).await;
                    let opened = match (method.as_str(), &answer) {
                        ("session/new", Ok(a)) => a["sessionId"].as_str().map(str::to_string),
                        ("session/load", Ok(_)) => loading,
                        _ => None,
                    };
                    server.conn.respond(id, answer);
                    // After the answer: the client knows the session's id by then.
                    if let Some(session) = opened {
                        server.announce_commands(&session).await;
                    }
                    if server.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
                        server.fell_idle();
                    }
                });
            }
            Incoming::Notification { method, params } if method == "session/cancel" => {
                self.cancel(&params);
            }
            // Other notifications (`$/cancel_request`, extensions) need nothing of odek.
            Incoming::Notification { .. } => {}
            Incoming::Response { id, outcome } => self.conn.answered(&id, outcome),
            Incoming::Invalid { id, error } => self.conn.respond(id, Err(error)),
        }
    }

    /// The connection has nothing to answer: unless a request comes first, the binary's
    /// code pages are given back after [`RELEASE_CODE_PAGES_AFTER`] (an idle `odek acp` sits
    /// beside the editor all day; the pages stay in the page cache and come back as needed).
    fn fell_idle(self: &Arc<Self>) {
        let idle = self.idle_since.fetch_add(1, Ordering::AcqRel) + 1;
        let server = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(RELEASE_CODE_PAGES_AFTER).await;
            let still_idle = server.upgrade().is_some_and(|s| {
                s.busy.load(Ordering::Acquire) == 0 && s.idle_since.load(Ordering::Acquire) == idle
            });
            if still_idle {
                match tokio::task::spawn_blocking(crate::code_pages::release).await {
                    Ok(Ok(released)) => tracing::debug!(
                        "odek acp: idle: gave back {} KiB of code pages ({} mappings)",
                        released.kib,
                        released.mappings
                    ),
                    Ok(Err(e)) => tracing::debug!("odek acp: idle: code pages kept: {e}"),
                    Err(_) => {}
                }
            }
        });
    }

    /// Tells the client the commands of session `id`: odek's and the custom ones of its
    /// directory (read now; the files' warnings go to stderr).
    async fn announce_commands(&self, id: &str) {
        let runtime = self
            .session(id)
            .and_then(|session| self.runtime_for(session.key.clone()));
        let catalog = match runtime {
            Ok(runtime) => tokio::task::spawn_blocking(move || runtime.commands())
                .await
                .unwrap_or_default(),
            Err(_) => crate::commands::Catalog::default(),
        };
        for warning in catalog.warnings() {
            eprintln!("{warning}");
        }
        commands::announce(&self.conn, id, &catalog);
    }

    async fn call(self: &Arc<Self>, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "authenticate" => self.backend().map(|_| json!({})),
            "session/new" => self.new_session(params).await,
            "session/load" => self.load_session(params).await,
            "session/prompt" => self.prompt(params).await,
            "session/set_mode" => self.set_mode(params),
            "session/set_model" => self.set_model(params, false),
            "session/set_config_option" => self.set_model(params, true),
            _ => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("odek acp has no method {method}"),
            )),
        }
    }

    fn initialize(&self, params: &Value) -> Result<Value, RpcError> {
        let Some(_asked) = params.get("protocolVersion").and_then(Value::as_u64) else {
            return Err(RpcError::invalid_params(
                "initialize needs \"protocolVersion\", a number",
            ));
        };
        *lock(&self.files) = files::FileCapabilities::of(&params["clientCapabilities"]);
        self.initialized.store(true, Ordering::Release);
        let images = self.backend.as_ref().is_ok_and(|b| b.base.config().images);
        let auth_methods = match &self.backend {
            Ok(_) => json!([]),
            Err(why) => json!([{
                "id": AUTH_METHOD,
                "name": "API key",
                "description": format!("odek has no API key: {why}. Set it there and start odek acp again."),
            }]),
        };
        // odek speaks version 1 only: asked for another, it answers with its own.
        Ok(json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": images, "audio": false, "embeddedContext": true},
                "mcpCapabilities": {"http": true, "sse": false},
            },
            "authMethods": auth_methods,
            "agentInfo": {"name": "odek", "title": "odek", "version": env!("CARGO_PKG_VERSION")},
        }))
    }

    fn backend(&self) -> Result<&Backend, RpcError> {
        self.backend.as_ref().map_err(|why| {
            RpcError::new(
                code::AUTH_REQUIRED,
                format!("Authentication required: {why}"),
            )
        })
    }

    /// The runtime of `key`: the base one for its own directory and model, else one built
    /// once and shared by every session of the key.
    fn runtime_for(&self, key: RuntimeKey) -> Result<Arc<Runtime>, RpcError> {
        let backend = self.backend()?;
        let base = &backend.base;
        let config = base.config();
        if key.cwd == base.cwd()
            && key.model == config.model
            && key.base_url == config.base_url
            && key.provider == config.provider
            && key.servers == 0
        {
            return Ok(base.clone());
        }
        let mut runtimes = lock(&self.runtimes);
        if let Some(runtime) = runtimes.get(&key) {
            return Ok(runtime.clone());
        }
        let mut load = backend.load.clone();
        load.cwd = key.cwd.clone();
        load.flags
            .set("model", key.model.as_str())
            .set("base_url", key.base_url.as_str());
        if let Some(provider) = &key.provider {
            load.flags.set("provider", provider.as_str());
        }
        let mut resolved = crate::config::load(&load).map_err(|e| {
            RpcError::internal(format!("the configuration of {}: {e}", key.cwd.display()))
        })?;
        let mut redactor = base.redactor().clone();
        if key.servers != 0 {
            let extra = lock(&self.client_servers)
                .get(&key.servers)
                .cloned()
                .unwrap_or_default();
            resolved.config.mcp_servers.extend(extra);
            // Their env and headers values are secrets too.
            redactor = crate::runtime::build_redactor(&resolved.config);
        }
        let mut runtime = Runtime::build(
            resolved.config,
            RuntimeOptions::surface(load.home.clone(), key.cwd.clone(), None, redactor),
        )
        .map_err(|e| RpcError::internal(e.to_string()))?;
        // The session's own servers run once for all its runtimes; the others are odek's.
        let sibling = runtimes
            .iter()
            .find(|(other, _)| key.servers != 0 && other.servers == key.servers)
            .map(|(_, runtime)| runtime.clone());
        match (key.servers, sibling) {
            (0, _) => runtime.share_with(base),
            (_, Some(sibling)) => runtime.share_with(&sibling),
            (_, None) => {}
        }
        let runtime = Arc::new(runtime);
        runtimes.insert(key, runtime.clone());
        Ok(runtime)
    }

    /// The key of a new session in `cwd`: the configured model.
    fn key_in(&self, cwd: PathBuf) -> Result<RuntimeKey, RpcError> {
        let config = self.backend()?.base.config();
        Ok(RuntimeKey {
            cwd,
            model: config.model.clone(),
            base_url: config.base_url.clone(),
            provider: config.provider.clone(),
            servers: 0,
        })
    }

    /// Keeps the client's MCP servers of a new session: the number its key carries (0 when
    /// it passed none).
    fn client_servers(&self, servers: &[Value]) -> Result<u64, RpcError> {
        if servers.is_empty() {
            return Ok(0);
        }
        let taken = mcp::servers(servers, self.backend()?.base.config())?;
        let mut all = lock(&self.client_servers);
        let number = all.len() as u64 + 1;
        all.insert(number, taken);
        Ok(number)
    }

    async fn new_session(self: &Arc<Self>, params: Value) -> Result<Value, RpcError> {
        let params: SessionParams = decode(params)?;
        let cwd = checked_cwd(&params.cwd)?;
        let key = RuntimeKey {
            servers: self.client_servers(&params.mcp_servers)?,
            ..self.key_in(cwd)?
        };
        let runtime = self.runtime_for(key.clone())?;
        start_mcp(&runtime).await;
        let handle = {
            let runtime = runtime.clone();
            blocking(move || {
                let (head, warning) = runtime.first_messages();
                if let Some(w) = warning {
                    eprintln!("odek acp: warning: {w}");
                }
                runtime.new_session("", head, ORIGIN_ACP, HOLDER)
            })
            .await?
        };
        let id = handle.id().to_string();
        let mut answer = json!({"sessionId": id, "modes": modes::state(modes::Mode::default())});
        models::add_to(&mut answer, &runtime, &handle);
        self.hold(key, handle);
        Ok(answer)
    }

    async fn load_session(self: &Arc<Self>, params: Value) -> Result<Value, RpcError> {
        let params: LoadParams = decode(params)?;
        let cwd = checked_cwd(&params.session.cwd)?;
        let id = params.session_id;
        if lock(&self.sessions).contains_key(&id) {
            return Err(RpcError::new(
                code::INVALID_REQUEST,
                format!("session {id} is open on this connection already"),
            ));
        }
        let base = self.backend()?.base.clone();
        let saved = {
            let id = id.clone();
            tokio::task::spawn_blocking(move || base.sessions().load(&id))
                .await
                .map_err(|e| RpcError::internal(e.to_string()))?
        }
        .map_err(|e| match e {
            crate::session::SessionError::NotFound { .. }
            | crate::session::SessionError::InvalidId { .. } => {
                RpcError::new(code::RESOURCE_NOT_FOUND, format!("no session {id}"))
            }
            e => RpcError::internal(e.message_without_paths()),
        })?;
        let key = RuntimeKey {
            cwd,
            model: saved.model.clone(),
            base_url: saved.base_url.clone().unwrap_or_else(|| {
                self.backend()
                    .map(|b| b.base.config().base_url.clone())
                    .unwrap_or_default()
            }),
            provider: saved.provider.clone().or_else(|| {
                let backend = self.backend().ok()?;
                backend.base.config().provider.clone()
            }),
            servers: self.client_servers(&params.session.mcp_servers)?,
        };
        let runtime = self.runtime_for(key.clone())?;
        start_mcp(&runtime).await;
        let handle = {
            let (runtime, id) = (runtime.clone(), id.clone());
            blocking(move || runtime.open_session(&id, HOLDER)).await?
        };
        replay::replay(&self.conn, &saved);
        let mut answer = json!({"modes": modes::state(modes::Mode::default())});
        models::add_to(&mut answer, &runtime, &handle);
        self.hold(key, handle);
        Ok(answer)
    }

    fn hold(&self, key: RuntimeKey, handle: Arc<SessionHandle>) {
        let session = AcpSession {
            mode: Mutex::new(modes::Mode::default()),
            key,
            handle,
            rejected: Arc::default(),
            run: Mutex::new(None),
        };
        lock(&self.sessions).insert(session.handle.id().to_string(), Arc::new(session));
    }

    fn session(&self, id: &str) -> Result<Arc<AcpSession>, RpcError> {
        lock(&self.sessions).get(id).cloned().ok_or_else(|| {
            RpcError::new(
                code::RESOURCE_NOT_FOUND,
                format!("no session {id} on this connection (session/new or session/load first)"),
            )
        })
    }

    async fn prompt(self: &Arc<Self>, params: Value) -> Result<Value, RpcError> {
        let params: PromptParams = decode(params)?;
        let session = self.session(&params.session_id)?;
        let supervisor = self.backend()?.supervisor.clone();
        let runtime = self.runtime_for(session.key.clone())?;
        if let Some((name, args)) = commands::of_prompt(&params.prompt) {
            if lock(&session.run).is_some() {
                return Err(RpcError::new(
                    code::INVALID_REQUEST,
                    format!(
                        "session {} is running a prompt: /{name} waits for its end",
                        session.handle.id()
                    ),
                ));
            }
            let text = commands::run(name, &args, &runtime, &session.handle).await;
            let update = updates::text_chunk("agent_message_chunk", text);
            updates::send_update(&self.conn, &params.session_id, update);
            return Ok(json!({"stopReason": "end_turn"}));
        }
        start_mcp(&runtime).await;
        let Some((prompt, mut scope)) = self.custom_command(&runtime, &params).await? else {
            return Ok(json!({"stopReason": "end_turn"}));
        };
        scope.mode = Some(*lock(&session.mode));
        let mut input = input::message(&prompt, runtime.config().images)?;
        // A command's session is named by what was typed, not by the command's prompt.
        if let Some(typed) = commands::typed_command(&params.prompt) {
            input.title =
                crate::text::fit(typed.trim().lines().next().unwrap_or(""), 200).into_owned();
        }
        let approver = approver::AcpApprover::new(
            self.conn.clone(),
            &params.session_id,
            session.rejected.clone(),
        );
        let written = Arc::new(files::WriteLog::default());
        let output = updates::Updates::new(
            self.conn.clone(),
            &params.session_id,
            runtime.cwd(),
            runtime.redactor().clone(),
            written.clone(),
        );
        let can = *lock(&self.files);
        let files = files::ClientFiles::of(&self.conn, &params.session_id, can, &written);
        let title = input.title;
        let submission = Submission {
            runtime: runtime.clone(),
            session: Some(session.handle.clone()),
            input: vec![input.message],
            approvals: Approvals::Local(Arc::new(approver)),
            output: Arc::new(output),
            external: input.external,
            origin: ORIGIN_ACP,
            files,
            scope,
        };
        let handle = session.start(&supervisor, submission, &title)?;
        let outcome = handle.outcome().await;
        *lock(&session.run) = None;
        let outcome = outcome.map_err(|e| RpcError::internal(e.message_without_paths()))?;
        stop_reason(outcome.run)
    }

    /// The prompt to run and its scope: the prompt as it is, or a custom command's prompt
    /// and scope (its warnings shown first); `None` when the command was refused, which
    /// the client has been told.
    async fn custom_command(
        &self,
        runtime: &Arc<Runtime>,
        params: &PromptParams,
    ) -> Result<Option<(Vec<Value>, TurnScope)>, RpcError> {
        if commands::typed_command(&params.prompt).is_none() {
            return Ok(Some((params.prompt.clone(), TurnScope::default())));
        }
        let (runtime, prompt) = (runtime.clone(), params.prompt.clone());
        let custom = tokio::task::spawn_blocking(move || commands::custom(&runtime, &prompt))
            .await
            .map_err(|e| RpcError::internal(e.to_string()))?;
        let say = |text: String| {
            let update = updates::text_chunk("agent_message_chunk", text);
            updates::send_update(&self.conn, &params.session_id, update);
        };
        match custom {
            commands::Custom::Not => Ok(Some((params.prompt.clone(), TurnScope::default()))),
            commands::Custom::Runs {
                prompt,
                scope,
                warnings,
            } => {
                if !warnings.is_empty() {
                    say(format!("{}\n\n", warnings.join("\n")));
                }
                Ok(Some((prompt, scope)))
            }
            commands::Custom::Refused(text) => {
                say(text);
                Ok(None)
            }
        }
    }

    /// `session/set_model`, and `session/set_config_option` (`as_option`: its one option,
    /// `model`): the session's next prompts ask that model (see `models.rs`).
    fn set_model(&self, params: Value, as_option: bool) -> Result<Value, RpcError> {
        let (id, model) = models::wanted(params, as_option)?;
        let session = self.session(&id)?;
        if lock(&session.run).is_some() {
            return Err(RpcError::invalid_params(format!(
                "session {id} is running a prompt: switch its model when it ends"
            )));
        }
        let runtime = self.runtime_for(session.key.clone())?;
        let offered = models::switch(&runtime, &session.handle, &model)?;
        if as_option {
            return Ok(json!({"configOptions": models::config_options(&offered)}));
        }
        Ok(json!({}))
    }

    /// `session/set_mode`: the next prompt's policy (a running one keeps its own).
    fn set_mode(&self, params: Value) -> Result<Value, RpcError> {
        let params: ModeParams = decode(params)?;
        let session = self.session(&params.session_id)?;
        let mode = modes::Mode::of(&params.mode_id).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "no mode {}: plan, ask or accept_edits (read_only is plan)",
                params.mode_id
            ))
        })?;
        *lock(&session.mode) = mode;
        Ok(json!({}))
    }

    fn cancel(&self, params: &Value) {
        let Some(id) = params.get("sessionId").and_then(Value::as_str) else {
            return;
        };
        let run = lock(&self.sessions)
            .get(id)
            .and_then(|s| lock(&s.run).clone());
        if let (Some(run), Ok(backend)) = (run, &self.backend) {
            let _ = backend.supervisor.cancel(&run);
        }
    }
}

/// The answer of a prompt whose run ended as `run` says.
fn stop_reason(run: RunOutcome) -> Result<Value, RpcError> {
    let reason = match run.result {
        // The iteration cap's report stands in for an answer.
        Ok(_) if run.partial => "max_turn_requests",
        Ok(_) => match run.answer_cut {
            Some(AnswerCut::Length) => "max_tokens",
            Some(AnswerCut::Refusal) => "refusal",
            None => "end_turn",
        },
        Err(RunError::Cancelled) => "cancelled",
        Err(RunError::MaxIterations(_) | RunError::Budget { .. }) => "max_turn_requests",
        Err(RunError::PromptBlocked(_)) => "refusal",
        Err(e) => return Err(RpcError::internal(e.to_string())),
    };
    Ok(json!({"stopReason": reason}))
}

/// `session/new`'s parameters (and `session/load`'s besides the id).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionParams {
    cwd: String,
    #[serde(default)]
    mcp_servers: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoadParams {
    session_id: String,
    #[serde(flatten)]
    session: SessionParams,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModeParams {
    session_id: String,
    mode_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptParams {
    session_id: String,
    prompt: Vec<Value>,
}

fn decode<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))
}

/// `cwd` when it is an absolute path of a directory.
fn checked_cwd(cwd: &str) -> Result<PathBuf, RpcError> {
    let path = Path::new(cwd);
    if !path.is_absolute() {
        return Err(RpcError::invalid_params(format!(
            "cwd must be an absolute path, not {cwd:?}"
        )));
    }
    if !path.is_dir() {
        return Err(RpcError::invalid_params(format!(
            "cwd {cwd} is not a directory"
        )));
    }
    Ok(path.to_path_buf())
}

/// Starts the runtime's MCP servers, once (later calls wait for the first); says on stderr
/// which did not start.
async fn start_mcp(runtime: &Runtime) {
    for warning in runtime.start_mcp().await {
        eprintln!("odek acp: {warning}");
    }
}

/// Runs blocking work (session files) off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, crate::runtime::RuntimeError> + Send + 'static,
) -> Result<T, RpcError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| RpcError::internal(e.to_string()))?
        .map_err(|e| RpcError::internal(e.message_without_paths()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
