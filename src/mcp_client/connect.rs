//! Starting one server: its transport (a child process or streamable HTTP), the MCP
//! handshake and the tool listing, within the server's `timeout_seconds`.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncBufReadExt;

use super::{McpServer, ProcessGroups, ServerState, StderrTail, Stop};
use crate::config::McpServerConfig;

type Client = RunningService<RoleClient, ClientConfig>;

/// The least time a server gets to start and list its tools, whatever its
/// `timeout_seconds` (a short per-call timeout must not keep a slow starter, like `npx`
/// resolving a package, from starting).
const MIN_START_SECONDS: u64 = 10;

/// Connects the server `name` (or leaves it disabled) within its `timeout_seconds`, but no
/// less than [`MIN_START_SECONDS`].
pub(super) async fn server(
    name: &str,
    config: &McpServerConfig,
    groups: &ProcessGroups,
) -> McpServer {
    let limit = config.timeout_seconds.max(MIN_START_SECONDS);
    server_within(name, config, groups, Duration::from_secs(limit)).await
}

/// [`server`] with the start-up limit given. Never fails: a server that cannot be started
/// is returned in [`ServerState::Failed`] with the reason.
pub(super) async fn server_within(
    name: &str,
    config: &McpServerConfig,
    groups: &ProcessGroups,
    limit: Duration,
) -> McpServer {
    let state = Arc::new(Mutex::new(ServerState::Disabled));
    let mut server = McpServer {
        name: name.to_string(),
        config: config.clone(),
        state: state.clone(),
        peer: None,
        tools: Vec::new(),
        stop: Mutex::new(None),
    };
    if config.disabled {
        return server;
    }
    let tail = StderrTail::default();
    let mut child = Spawned::default();
    let opened = match start(config, &tail, groups, &mut child) {
        Err(e) => Err(e),
        Ok(pending) => match tokio::time::timeout(limit, handshake(pending)).await {
            Ok(result) => result,
            Err(_) => Err(StartError::HandshakeTimeout(limit)),
        },
    };
    match opened {
        Ok((client, tools)) => {
            server.peer = Some(client.peer().clone());
            server.tools = tools;
            *state.lock().unwrap_or_else(PoisonError::into_inner) = ServerState::Running;
            *server.stop.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(watch(client, state, child.group, groups.clone()));
        }
        Err(why) => {
            if let Some(g) = child.group {
                groups.kill(g);
            }
            // The reader ends at EOF, once the process is gone: its last lines explain.
            if let Some(reader) = child.stderr_reader {
                let _ = tokio::time::timeout(STDERR_DRAIN, reader).await;
            }
            let why = match tail.summary() {
                Some(stderr) => format!("{why} (its stderr: {stderr})"),
                None => why.to_string(),
            };
            *state.lock().unwrap_or_else(PoisonError::into_inner) =
                ServerState::Failed(printable(&why));
        }
    }
    server
}

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
enum StartError {
    /// The program could not be started.
    #[error("cannot start {program:?}: {source}")]
    Spawn {
        /// The command.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A configured header is not a valid HTTP header.
    #[error("header {name:?}: {reason}")]
    Header {
        /// The header.
        name: String,
        /// Why.
        reason: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(reqwest::Error),
    /// No answer in time.
    #[error("no answer to the MCP handshake within {}s", .0.as_secs())]
    HandshakeTimeout(Duration),
    /// The handshake failed.
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    /// Listing the tools failed.
    #[error("listing its tools failed: {0}")]
    ListTools(String),
}

impl crate::error::Classified for StartError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            StartError::Spawn { .. } | StartError::Header { .. } => ErrorKind::Config,
            StartError::Client(_) => ErrorKind::Internal,
            StartError::HandshakeTimeout(_)
            | StartError::Handshake(_)
            | StartError::ListTools(_) => ErrorKind::Remote,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            StartError::Spawn { .. } | StartError::Header { .. } => Some(
                "check its entry under mcp_servers in the global config.json (docs/MCP.md); odek mcp list tries each server",
            ),
            StartError::HandshakeTimeout(_) | StartError::Handshake(_) => {
                Some("odek mcp list shows each server's state and the end of its stderr")
            }
            StartError::Client(_) | StartError::ListTools(_) => None,
        }
    }
}

/// A transport ready for the handshake.
enum Pending {
    Child(TokioChildProcess),
    Http(StreamableHttpClientTransport<reqwest::Client>),
}

/// What was spawned for a stdio server.
#[derive(Default)]
struct Spawned {
    /// Its process group (the child leads it).
    group: Option<i32>,
    /// The task copying its stderr into the tail.
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
}

/// How long a failed start waits for the server's last stderr lines.
const STDERR_DRAIN: Duration = Duration::from_secs(1);

/// `text` with control characters (a server's stderr may hold escape sequences) replaced
/// by spaces.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Spawns the child process (registering its process group in `groups`) or prepares the
/// HTTP client.
fn start(
    config: &McpServerConfig,
    tail: &StderrTail,
    groups: &ProcessGroups,
    spawned: &mut Spawned,
) -> Result<Pending, StartError> {
    if let Some(url) = &config.url {
        return http_transport(url, &config.headers).map(Pending::Http);
    }
    let program = config.command.as_deref().unwrap_or_default();
    let mut cmd = tokio::process::Command::new(program);
    crate::process_group::hide_keys(&mut cmd);
    cmd.args(&config.args)
        .envs(&config.env)
        .process_group(0)
        .kill_on_drop(true);
    let (child, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| StartError::Spawn {
            program: program.to_string(),
            source,
        })?;
    spawned.group = child.id().and_then(|pid| i32::try_from(pid).ok());
    if let Some(g) = spawned.group {
        groups.add(g);
    }
    if let Some(stderr) = stderr {
        let tail = tail.clone();
        spawned.stderr_reader = Some(tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!("mcp stderr: {line}");
                tail.push(line);
            }
        }));
    }
    Ok(Pending::Child(child))
}

/// The streamable-HTTP transport for `url`, sending `headers` with every request, over
/// odek's own HTTP client (the same TLS set-up as the model endpoint).
fn http_transport(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, StartError> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let bad = |reason: &dyn std::fmt::Display| StartError::Header {
            name: name.clone(),
            reason: reason.to_string(),
        };
        let header =
            reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|e| bad(&e))?;
        let mut value = reqwest::header::HeaderValue::from_str(value).map_err(|e| bad(&e))?;
        value.set_sensitive(true);
        custom.insert(header, value);
    }
    let client = crate::llm::http::client_builder()
        .connect_timeout(Duration::from_secs(10))
        .redirect(same_origin_redirects())
        .build()
        .map_err(StartError::Client)?;
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// Follows a redirect only to the same scheme, host and port (at most 10), so the
/// configured headers, which may hold credentials, never reach another server.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(|u| u.origin());
        if attempt.previous().len() > 10 {
            attempt.error("too many redirects")
        } else if first.as_ref() == Some(&attempt.url().origin()) {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// The MCP handshake, then the server's tools.
async fn handshake(pending: Pending) -> Result<(Client, Vec<rmcp::model::Tool>), StartError> {
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("odek", env!("CARGO_PKG_VERSION")),
    );
    let client = match pending {
        Pending::Child(t) => info.serve(t).await,
        Pending::Http(t) => info.serve(t).await,
    }
    .map_err(|e| StartError::Handshake(e.to_string()))?;
    let tools = client
        .peer()
        .list_all_tools()
        .await
        .map_err(|e| StartError::ListTools(e.to_string()))?;
    Ok((client, tools))
}

/// Watches the connection: when it ends (the server went away, or odek closed it), a
/// running server becomes exited and what is left of its process group is killed at once,
/// while its id cannot have been reused yet.
fn watch(
    client: Client,
    state: Arc<Mutex<ServerState>>,
    group: Option<i32>,
    groups: ProcessGroups,
) -> Stop {
    let cancel = client.cancellation_token();
    let watched = groups.clone();
    let finished = tokio::spawn(async move {
        let reason = client.waiting().await;
        if let Some(g) = group {
            watched.kill(g);
        }
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        if *state == ServerState::Running {
            let why = match reason {
                Ok(r) => format!("its connection ended ({r:?})"),
                Err(e) => format!("its connection failed ({e})"),
            };
            *state = ServerState::Exited(why);
        }
    });
    Stop {
        cancel,
        finished,
        process_group: group,
        groups,
    }
}
