//! The server: every route of the API and the web UI behind the guard, the body limits and
//! `Cache-Control: no-store`, served until SIGINT or SIGTERM.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;

use super::credentials::BrowserSessions;
use super::error::{ApiError, BODY_LIMIT, PROMPT_BODY_LIMIT};
use super::hub::Hub;
use super::{AppState, api, auth, checkpoints, commands, error, limits, listen, memory, models};
use super::{compact, schedules, sessions, skills, ui};
use crate::config::LoadOptions;
use crate::events::EventWriter;
use crate::redact::Redactor;
use crate::runtime::{Runtime, Supervisor};

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
        browsers: BrowserSessions::new(port),
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
        .route("/api/sessions/{id}/messages", post(api::message))
        .route("/api/sessions/{id}/plan", get(sessions::plan))
        .route("/api/sessions/{id}/model", post(models::switch))
        .route("/api/sessions/{id}/compact", post(compact::compact))
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
        .route("/api/commands", get(commands::list))
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

/// Fuzzing entry: `data` as every request body the API takes, decoded and checked as the
/// routes do.
#[cfg(any(fuzzing, test))]
pub fn fuzz_request_bodies(data: &[u8]) {
    api::fuzz_bodies(data);
    memory::fuzz_bodies(data);
    sessions::fuzz_bodies(data);
}
