//! `/model`: the session's model and the ones it may switch to; `/model [PROVIDER:]MODEL`
//! switches the session (docs/MODELS.md).

use super::Repl;
use crate::config::ModelRef;

impl Repl {
    /// `/model`: the model and the choices; `/model [PROVIDER:]MODEL`: the next turns' model.
    pub(super) fn model(&mut self, line: &str) {
        let runtime = self.setup.runtime.clone();
        let Some(wanted) = line.split_whitespace().nth(1) else {
            let choices = self
                .setup
                .process
                .block_on(runtime.model_choices(Some(&self.session)));
            println!("Model: {}", runtime.session_model(Some(&self.session)));
            for (i, name) in choices.iter().enumerate() {
                let mark = if i == 0 { "*" } else { " " };
                println!("{mark} {}", crate::text::visible(name, false));
            }
            println!("/model [PROVIDER:]MODEL switches the session to that model");
            return;
        };
        let t = self.setup.terminal.clone();
        let switched = match ModelRef::parse(wanted, runtime.config()) {
            Ok(wanted) => runtime
                .switch_model(&self.session, &wanted)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match switched {
            Ok(note) => {
                println!("Model: {}", runtime.session_model(Some(&self.session)));
                if let Some(note) = note {
                    t.info(&format!("odek: note: {note}"));
                }
            }
            Err(e) => {
                let shown = crate::text::visible(&e, false);
                t.line(&format!("{} {shown}", t.style().red("odek:")));
            }
        }
    }
}
