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
mod commands;
mod compact;
mod credentials;
mod error;
mod export;
pub mod hub;
mod limits;
mod listen;
mod memory;
mod models;
mod router;
mod runs;
mod schedules;
mod sessions;
mod skills;
mod ui;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

pub use credentials::new_token;
#[cfg(any(fuzzing, test))]
pub use router::fuzz_request_bodies;
pub use router::{MCP_PATH, ServeParts, serve};

use credentials::BrowserSessions;
use error::ApiError;
use hub::Hub;
use limits::Limiters;

use crate::config::LoadOptions;
use crate::events::EventWriter;
use crate::redact::Redactor;
use crate::runtime::{Runtime, RuntimeOptions, Supervisor};

/// The state every handler shares.
pub struct AppState {
    token: String,
    /// The browsers signed in with the token URL (their cookie credentials).
    browsers: BrowserSessions,
    base: Arc<Runtime>,
    load: LoadOptions,
    runtimes: Mutex<HashMap<RuntimeKey, Arc<Runtime>>>,
    events: Option<EventWriter>,
    redactor: Arc<Redactor>,
    hub: Arc<Hub>,
    supervisor: Supervisor,
    limits: Limiters,
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
    /// The provider (its wire and key); `None`: the server's.
    provider: Option<String>,
    sandbox: Option<bool>,
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
        let provider_is_base = key.provider.is_none() || key.provider == config.provider;
        if key.model == config.model
            && key.base_url == config.base_url
            && provider_is_base
            && key.sandbox.is_none()
        {
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
        if let Some(provider) = &key.provider {
            load.flags.set("provider", provider.as_str());
        }
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
}

impl AppState {
    /// The runtime a turn of the saved session `saved` runs on: its model, endpoint,
    /// provider and sandbox posture.
    fn session_runtime(&self, saved: &crate::session::Session) -> Result<Arc<Runtime>, ApiError> {
        self.runtime_for(RuntimeKey {
            model: saved.model.clone(),
            base_url: (saved.base_url.clone())
                .unwrap_or_else(|| self.base.config().base_url.clone()),
            provider: saved.provider.clone(),
            sandbox: saved.sandbox,
        })
    }
}

/// The address to print and open: the token URL of `addr`.
pub fn token_url(addr: &SocketAddr, token: &str) -> String {
    format!("http://{addr}/?token={token}")
}
