//! Starting a run from `POST /api/prompt`: a new session or a turn of a saved one, on the
//! runtime of its model and endpoint, submitted to the supervisor.

use std::sync::Arc;

use super::error::ApiError;
use super::{AppState, RuntimeKey, sessions};
use crate::engine::NoopObserver;
use crate::llm::Message;
use crate::runtime::{Approvals, Runtime, SessionHandle, Submission};
use crate::session::ORIGIN_SERVE;

/// Who holds a session while the server runs a turn of it.
const HOLDER: &str = "odek serve";
impl AppState {
    /// Starts a run: a new session (origin `serve`) or a turn of `session_id`. Returns the
    /// run id and the session id once the turn is running.
    pub(super) async fn start_run(
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
            scope: Default::default(),
        })?;
        Ok((handle.run_id, handle.session_id))
    }
}
