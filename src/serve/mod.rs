//! `odek serve`: the HTTP API (axum) over the same runtime, session files, locks and events
//! as the command line. See `docs/SERVE.md` for every endpoint.
//!
//! The server owns one [`Runtime`] per model and endpoint it runs (built on first use from
//! the same configuration layers), one event writer whose sink is the [`hub::Hub`] (ring and
//! live stream) and the rate limiters. Runs are the process's [`Supervisor`]'s: a run is one
//! turn of a session, held (locked) by the server while it runs and released when it ends,
//! so a session started here can be continued with `odek continue --id` and the other way
//! round; its approvals are answered over HTTP by id, and its frames (streamed answer,
//! approvals) go to the hub.

mod api;
mod auth;
mod checkpoints;
mod error;
mod export;
pub mod hub;
mod limits;
mod listen;
mod memory;
mod models;
mod schedules;
mod sessions;
mod skills;
mod ui;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;

pub use auth::new_token;
use error::ApiError;
use hub::Hub;

use crate::config::LoadOptions;
use crate::engine::NoopObserver;
use crate::events::EventWriter;
use crate::llm::Message;
use crate::redact::Redactor;
use crate::runtime::{Approvals, Runtime, RuntimeOptions, SessionHandle, Submission, Supervisor};
use crate::session::ORIGIN_SERVE;

/// Who holds a session while the server runs a turn of it.
const HOLDER: &str = "odek serve";
/// Largest management body (rename, approvals).
pub(crate) const BODY_LIMIT: usize = 1024 * 1024;
/// Largest `POST /api/prompt` body.
pub(crate) const PROMPT_BODY_LIMIT: usize = 8 * 1024 * 1024;

/// What the command line hands the server.
pub struct ServeParts {
    /// The runtime of the configured model and endpoint.
    pub runtime: Arc<Runtime>,
    /// The process's supervisor, where every run goes.
    pub supervisor: Supervisor,
    /// How the configuration was loaded (for the runtimes of other models and of resumed
    /// sessions, built from the same layers).
    pub load: LoadOptions,
    /// The process's event writer (its sink feeds `hub`).
    pub events: Option<EventWriter>,
    /// The hub behind the event writer.
    pub hub: Arc<Hub>,
    /// This process's redactor (the server's token included).
    pub redactor: Arc<Redactor>,
    /// The instance token.
    pub token: String,
    /// odek as an MCP server over streamable HTTP at `/api/mcp` (`odek serve --mcp`).
    pub mcp: Option<crate::mcp_server::OdekMcpServer>,
    /// Where scheduled answers for Telegram go (the Bot API, when a token is set).
    pub chat: Option<Arc<dyn crate::schedule::deliver::ChatDelivery>>,
}

/// The state every handler shares.
pub struct AppState {
    token: String,
    /// The browsers signed in with the token URL (their cookie credentials).
    browsers: auth::BrowserSessions,
    base: Arc<Runtime>,
    load: LoadOptions,
    runtimes: Mutex<HashMap<RuntimeKey, Arc<Runtime>>>,
    events: Option<EventWriter>,
    redactor: Arc<Redactor>,
    hub: Arc<Hub>,
    supervisor: Supervisor,
    limits: limits::Limiters,
    shutdown: CancellationToken,
    started: Instant,
    chat: Option<Arc<dyn crate::schedule::deliver::ChatDelivery>>,
}

/// What makes one runtime different from another: the model, the endpoint and whether
/// shell commands are sandboxed (a resumed session keeps its posture).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RuntimeKey {
    model: String,
    base_url: String,
    sandbox: Option<bool>,
}

/// Serves on `listener` until SIGINT or SIGTERM: then new prompts are refused, running
/// runs are cancelled and saved (their terminal events written), the event streams end
/// and the function returns.
pub async fn serve(parts: ServeParts, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let rates = parts.runtime.config().serve.rate_limits;
    let port = listener.local_addr()?.port();
    let hub = parts.hub.clone();
    // Frames go to the live streams as they are published, so none is still on its way
    // when shutdown ends the streams.
    parts.supervisor.on_frame(move |frame| {
        hub.publish_frame(frame);
        true
    });
    let state = Arc::new(AppState {
        token: parts.token,
        browsers: auth::BrowserSessions::new(port),
        base: parts.runtime,
        load: parts.load,
        runtimes: Mutex::new(HashMap::new()),
        events: parts.events,
        redactor: parts.redactor,
        hub: parts.hub,
        supervisor: parts.supervisor,
        limits: limits::Limiters::new(rates),
        shutdown: CancellationToken::new(),
        started: Instant::now(),
        chat: parts.chat,
    });
    let app = router(state.clone(), parts.mcp);
    let stopping = state.clone();
    listen::serve_until(listener, app, async move {
        crate::process_group::termination().await;
        stopping.stop().await;
    })
    .await;
    Ok(())
}

/// Every route (with `/api/mcp` when `mcp` is given), behind the guard, the body limits and
/// `Cache-Control: no-store`.
fn router(state: Arc<AppState>, mcp: Option<crate::mcp_server::OdekMcpServer>) -> Router {
    let mut routes = Router::new()
        .route("/", get(ui::index))
        .route("/style.css", get(ui::stylesheet))
        .route("/favicon.svg", get(ui::icon))
        .route("/js/{file}", get(ui::script))
        .route("/vendor/{file}", get(ui::vendor))
        .route("/api/health", get(api::health))
        .route("/api/logout", post(auth::logout))
        .route("/api/sessions", get(sessions::list))
        .route(
            "/api/sessions/{id}",
            get(sessions::detail)
                .post(sessions::rename)
                .delete(sessions::delete),
        )
        .route("/api/sessions/{id}/plan", get(sessions::plan))
        .route("/api/sessions/{id}/checkpoints", get(checkpoints::list))
        .route("/api/sessions/{id}/rewind", post(checkpoints::rewind))
        .route("/api/sessions/{id}/export", get(sessions::export))
        .route(
            "/api/prompt",
            post(api::prompt).layer(DefaultBodyLimit::max(PROMPT_BODY_LIMIT)),
        )
        .route("/api/runs", get(api::runs))
        .route("/api/runs/{id}", get(api::run))
        .route("/api/runs/{id}/cancel", post(api::cancel))
        .route("/api/runs/{id}/approvals", get(api::approvals))
        .route("/api/runs/{id}/approvals/{aid}", post(api::answer))
        .route("/api/runs/{id}/questions", get(api::questions))
        .route("/api/runs/{id}/questions/{qid}", post(api::reply))
        .route("/api/events", get(api::events))
        .route("/api/events/stream", get(api::stream))
        .route("/api/usage", get(api::usage))
        .route("/api/config", get(api::config))
        .route("/api/tools", get(api::tools))
        .route("/api/memory", get(memory::list).post(memory::add))
        .route(
            "/api/memory/{id}",
            get(memory::detail)
                .post(memory::edit)
                .delete(memory::delete),
        )
        .route("/api/memory/{id}/accept", post(memory::accept))
        .route("/api/search", get(memory::search))
        .route("/api/schedules", get(schedules::list))
        .route("/api/schedules/{name}/run", post(schedules::run))
        .route("/api/schedules/{name}/enable", post(schedules::enable))
        .route("/api/schedules/{name}/disable", post(schedules::disable))
        .route("/api/skills", get(skills::list))
        .route("/api/skills/{name}/trust", post(skills::trust))
        .route("/api/models", get(models::list));
    if let Some(server) = mcp {
        routes = routes.route(MCP_PATH, mcp_service(&state, server));
    }
    routes
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn_with_state(state.clone(), auth::guard))
        .layer(middleware::from_fn(no_store))
        .layer(middleware::map_response(error::json_errors))
        .with_state(state)
}

/// `/api/mcp`'s service: the MCP server over streamable HTTP, stateless (one service per
/// request, answered with JSON; nothing kept between requests). It sits behind the same
/// guard (loopback Host, token, same origin) as every API route, so rmcp's own Host list
/// is off; only POST carries requests, so other methods get the JSON 405 of every route.
fn mcp_service(
    state: &AppState,
    server: crate::mcp_server::OdekMcpServer,
) -> axum::routing::MethodRouter<Arc<AppState>> {
    use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(state.shutdown.child_token())
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .disable_allowed_hosts();
    axum::routing::post_service(StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    ))
}

/// Where `odek serve --mcp` serves MCP.
pub const MCP_PATH: &str = "/api/mcp";

async fn not_found(req: Request) -> ApiError {
    ApiError::not_found(format!("no such endpoint: {}", req.uri().path()))
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} is not allowed on {}", req.method(), req.uri().path()),
    )
}

/// `Cache-Control: no-store` on every API response (and on the token page).
async fn no_store(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

impl AppState {
    /// Shutdown: refuse new prompts, cancel the runs and wait for them to save, then end
    /// the event streams.
    async fn stop(&self) {
        let running = self.supervisor.running();
        eprintln!("odek serve: stopping ({running} running run(s) cancelled and saved)");
        self.supervisor.shutdown().await;
        self.shutdown.cancel();
    }

    /// The runtime for `key`: the server's own when it matches, else one built (once) from
    /// the same configuration layers with the model and endpoint of `key`.
    fn runtime_for(&self, key: RuntimeKey) -> Result<Arc<Runtime>, ApiError> {
        let config = self.base.config();
        if key.model == config.model && key.base_url == config.base_url && key.sandbox.is_none() {
            return Ok(self.base.clone());
        }
        let mut runtimes = self.runtimes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(rt) = runtimes.get(&key) {
            return Ok(rt.clone());
        }
        let mut load = self.load.clone();
        load.flags
            .set("model", key.model.as_str())
            .set("base_url", key.base_url.as_str());
        let mut resolved = crate::config::load(&load)
            .map_err(|e| ApiError::internal_logged("the configuration could not be loaded", &e))?;
        resolved.config.keep_sandbox_posture(false, key.sandbox);
        let mut runtime = Runtime::build(
            resolved.config,
            RuntimeOptions::surface(
                load.home.clone(),
                self.base.cwd().to_path_buf(),
                self.events.clone(),
                self.redactor.clone(),
            ),
        )?;
        runtime.share_with(&self.base);
        let runtime = Arc::new(runtime);
        runtimes.insert(key, runtime.clone());
        Ok(runtime)
    }

    /// Starts a run: a new session (origin `serve`) or a turn of `session_id`. Returns the
    /// run id and the session id once the turn is running.
    async fn start_run(
        self: &Arc<Self>,
        content: String,
        session_id: Option<String>,
        model: Option<String>,
        files: Vec<crate::prompt::ContextFile>,
        images: Vec<(String, crate::llm::ImagePart)>,
    ) -> Result<(String, String), ApiError> {
        if self.supervisor.is_stopping() {
            return Err(ApiError::shutting_down());
        }
        let app = self.clone();
        let (runtime, session, content) = tokio::task::spawn_blocking(move || {
            app.open_or_create(&content, session_id.as_deref(), model)
                .map(|(rt, s)| (rt, s, content))
        })
        .await
        .map_err(|e| ApiError::internal(e.to_string()))??;
        // The session's title is the prompt as typed; the turn reads the files after it,
        // and the names of the images that come with it.
        let external = if files.is_empty() && images.is_empty() {
            Vec::new()
        } else {
            vec!["attachment".to_string()]
        };
        let mut input = Message::user(crate::prompt::with_attached_files(
            &content,
            &files,
            "attachment",
        ));
        for (name, image) in images {
            input
                .content
                .push_str(&format!("\n\n[Image attached: {name}]"));
            input.images.push(image);
        }
        self.launch(runtime, session, input, external)
    }

    fn open_or_create(
        &self,
        content: &str,
        session_id: Option<&str>,
        model: Option<String>,
    ) -> Result<(Arc<Runtime>, Arc<SessionHandle>), ApiError> {
        let config = self.base.config();
        let Some(id) = session_id else {
            let runtime = self.runtime_for(RuntimeKey {
                model: model.unwrap_or_else(|| config.model.clone()),
                base_url: config.base_url.clone(),
                sandbox: None,
            })?;
            let (head, warning) = runtime.first_messages();
            if let Some(w) = warning {
                eprintln!("odek serve: warning: {w}");
            }
            let session = runtime.new_session(content, head, ORIGIN_SERVE, HOLDER)?;
            return Ok((runtime, session));
        };
        let id = sessions::standard_id(id)?;
        if self.supervisor.running_in(id).is_some() {
            return Err(ApiError::conflict(format!(
                "session {id} is already running a turn"
            )));
        }
        let saved = self.base.sessions().load(id)?;
        let runtime = self.runtime_for(RuntimeKey {
            model: saved.model.clone(),
            base_url: saved
                .base_url
                .clone()
                .unwrap_or_else(|| config.base_url.clone()),
            sandbox: saved.sandbox,
        })?;
        let session = runtime.open_session(id, HOLDER)?;
        Ok((runtime, session))
    }

    /// Submits the turn to the supervisor: approvals are answered over HTTP (60 s, then
    /// expired), the frames go to the hub.
    fn launch(
        self: &Arc<Self>,
        runtime: Arc<Runtime>,
        session: Arc<SessionHandle>,
        input: Message,
        external: Vec<String>,
    ) -> Result<(String, String), ApiError> {
        let handle = self.supervisor.submit(Submission {
            runtime,
            session: Some(session),
            input: vec![input],
            approvals: Approvals::remote(),
            output: Arc::new(NoopObserver),
            external,
            origin: crate::session::ORIGIN_SERVE,
            files: None,
        })?;
        Ok((handle.run_id, handle.session_id))
    }
}

/// The address to print and open: the token URL of `addr`.
pub fn token_url(addr: &SocketAddr, token: &str) -> String {
    format!("http://{addr}/?token={token}")
}

/// Fuzzing entry: `data` as every request body the API takes, decoded and checked as the
/// routes do.
#[cfg(any(fuzzing, test))]
pub fn fuzz_request_bodies(data: &[u8]) {
    api::fuzz_bodies(data);
    memory::fuzz_bodies(data);
    sessions::fuzz_bodies(data);
}
