//! Starting a run from `POST /api/prompt`: a new session or a turn of a saved one, on the
//! runtime of its model and endpoint, a custom command's prompt and scope when the content
//! is `/NAME args`, submitted to the supervisor.

use std::sync::Arc;

use super::error::ApiError;
use super::{AppState, RuntimeKey, commands, sessions};
use crate::config::ModelRef;
use crate::engine::NoopObserver;
use crate::llm::Message;
use crate::protocol::api::{PromptAccepted, RunStatus};
use crate::runtime::{
    Approvals, Delivered, Delivery, Invocation, RunHandle, Runtime, SessionHandle, Submission,
    TurnScope,
};
use crate::session::ORIGIN_SERVE;

/// Who holds a session while the server runs a turn of it.
pub(super) const HOLDER: &str = "odek serve";

/// A run started: its ids, and the custom command it runs with what its file asks that
/// odek cannot keep.
pub(super) struct Started {
    pub run_id: String,
    pub session_id: String,
    pub command: Option<String>,
    pub warnings: Vec<String>,
}

/// The runtime and session of a run, and the custom command its prompt runs.
struct Opened {
    runtime: Arc<Runtime>,
    session: Arc<SessionHandle>,
    invocation: Option<Invocation>,
}

impl AppState {
    /// Starts a run: a new session (origin `serve`) or a turn of `session_id`; a prompt
    /// that starts with `/NAME` runs that custom command (its prompt, its model and
    /// tools). Returns once the turn is running.
    pub(super) async fn start_run(
        self: &Arc<Self>,
        content: String,
        session_id: Option<String>,
        model: Option<String>,
        files: Vec<crate::prompt::ContextFile>,
        images: Vec<(String, crate::llm::ImagePart)>,
    ) -> Result<Started, ApiError> {
        if self.supervisor.is_stopping() {
            return Err(ApiError::shutting_down());
        }
        let app = self.clone();
        let (opened, content) = tokio::task::spawn_blocking(move || {
            app.open_or_create(&content, session_id.as_deref(), model)
                .map(|opened| (opened, content))
        })
        .await
        .map_err(|e| ApiError::internal(e.to_string()))??;
        let Opened {
            runtime,
            session,
            invocation,
        } = opened;
        let (text, scope, command, warnings) = match invocation {
            Some(i) => (i.prompt, i.scope, Some(i.name), i.warnings),
            None => (content, TurnScope::default(), None, Vec::new()),
        };
        for warning in &warnings {
            eprintln!("odek serve: {warning}");
        }
        // The session's title is the prompt as typed; the turn reads the files after it,
        // and the names of the images that come with it.
        let external = if files.is_empty() && images.is_empty() {
            Vec::new()
        } else {
            vec!["attachment".to_string()]
        };
        let mut input = Message::user(crate::prompt::with_attached_files(
            &text,
            &files,
            "attachment",
        ));
        crate::prompt::attach_images(&mut input, images);
        let (run_id, session_id) = self.launch(runtime, session, input, external, scope)?;
        Ok(Started {
            run_id,
            session_id,
            command,
            warnings,
        })
    }

    /// The run's runtime and session, the command expanded on that runtime before a new
    /// session is made (a refused command leaves nothing behind).
    fn open_or_create(
        &self,
        content: &str,
        session_id: Option<&str>,
        model: Option<String>,
    ) -> Result<Opened, ApiError> {
        let config = self.base.config();
        let mut other_provider = None;
        let (runtime, id) = match session_id {
            None => {
                // A model of another provider: the server's runtime, the session switched
                // to it before its first turn (docs/MODELS.md).
                let wanted = model.as_deref().map(|m| ModelRef::parse(m, config));
                let wanted = wanted
                    .transpose()
                    .map_err(|e| ApiError::bad_request(e.to_string()))?;
                other_provider = wanted.filter(|w| w.normalized(config).provider.is_some());
                let runtime = match other_provider {
                    Some(_) => self.base.clone(),
                    None => self.runtime_for(RuntimeKey {
                        model: model.unwrap_or_else(|| config.model.clone()),
                        base_url: config.base_url.clone(),
                        provider: None,
                        sandbox: None,
                    })?,
                };
                (runtime, None)
            }
            Some(id) => {
                let id = sessions::standard_id(id)?;
                if self.supervisor.running_in(id).is_some() {
                    return Err(ApiError::conflict(format!(
                        "session {id} is already running a turn"
                    )));
                }
                let saved = self.base.sessions().load(id)?;
                (self.session_runtime(&saved)?, Some(id))
            }
        };
        let invocation = runtime
            .expand_command(content)
            .map_err(|e| commands::refused(&e))?;
        let session = match id {
            Some(id) => runtime.open_session(id, HOLDER)?,
            None => {
                let (head, warning) = runtime.first_messages();
                if let Some(w) = warning {
                    eprintln!("odek serve: warning: {w}");
                }
                let session = runtime.new_session(content, head, ORIGIN_SERVE, HOLDER)?;
                if let Some(wanted) = &other_provider {
                    runtime
                        .switch_model(&session, wanted)
                        .map_err(super::error::model_refused)?;
                }
                session
            }
        };
        Ok(Opened {
            runtime,
            session,
            invocation,
        })
    }

    /// A prompt for `session_id` while a turn of it runs here: given to that run (a steer)
    /// or queued as a next turn. `None` when no turn of it runs (a turn starts instead).
    /// Attachments wait for the turn's end (409).
    pub(super) fn deliver(
        &self,
        session_id: &str,
        content: &str,
        queue: bool,
        attachments: bool,
    ) -> Result<Option<PromptAccepted>, ApiError> {
        let id = sessions::standard_id(session_id)?;
        let Some(run_id) = self.supervisor.running_in(id) else {
            return Ok(None);
        };
        if attachments {
            return Err(ApiError::conflict(format!(
                "session {id} is running a turn: send attachments once it ended (text alone steers it)"
            )));
        }
        let how = if queue {
            Delivery::Queue
        } else {
            Delivery::Steer
        };
        let position = match self.supervisor.deliver(id, content.to_string(), how) {
            Delivered::NotRunning(_) => return Ok(None),
            Delivered::Taken { position } => position,
        };
        Ok(Some(PromptAccepted {
            run_id,
            session_id: id.to_string(),
            status: RunStatus::Running,
            command: None,
            warnings: Vec::new(),
            delivered: Some(if queue { "queued" } else { "steered" }.to_string()),
            position: (position > 0).then_some(position),
        }))
    }

    /// Once `handle`'s run ended, runs what its session's inbox holds next: a steer that
    /// came after its last model request, else the first queued prompt. A turn another
    /// prompt started meanwhile gets it queued instead.
    fn continue_after(self: &Arc<Self>, handle: RunHandle) {
        let app = self.clone();
        let session_id = handle.session_id.clone();
        tokio::spawn(async move {
            if let (_, Some(next)) = handle.outcome_and_next().await {
                app.run_next(session_id, next).await;
            }
        });
    }

    /// The next turn of `session_id` (boxed: it continues in turn once it ended).
    fn run_next(
        self: Arc<Self>,
        session_id: String,
        text: String,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(async move {
            let started = self
                .start_run(
                    text.clone(),
                    Some(session_id.clone()),
                    None,
                    Vec::new(),
                    Vec::new(),
                )
                .await;
            if let Err(e) = started
                && let Delivered::NotRunning(_) =
                    self.supervisor.deliver(&session_id, text, Delivery::Queue)
            {
                eprintln!(
                    "odek serve: a queued prompt of session {session_id} did not start: {}",
                    e.message
                );
            }
        })
    }

    /// Submits the turn to the supervisor: approvals are answered over HTTP (60 s, then
    /// expired), the frames go to the hub.
    fn launch(
        self: &Arc<Self>,
        runtime: Arc<Runtime>,
        session: Arc<SessionHandle>,
        input: Message,
        external: Vec<String>,
        scope: TurnScope,
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
            scope,
        })?;
        let ids = (handle.run_id.clone(), handle.session_id.clone());
        self.continue_after(handle);
        Ok(ids)
    }
}
