//! `clarify`: the model asks the user a question and waits for the answer — on the
//! terminal, as a card in the web UI, as buttons in Telegram. A turn with nobody to ask gets
//! [`NO_USER_ANSWER`] at once.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::approval::{Approver, Question, QuestionAnswer};
use super::{Tool, ToolContext, ToolError, decode_args};

/// The result when nobody can be asked.
pub const NO_USER_ANSWER: &str =
    "no user is available: decide, and state the assumption in your answer";

/// The result when nobody answered in time.
pub const EXPIRED_ANSWER: &str =
    "the user did not answer in time: decide, and state the assumption in your answer";

/// Most options of one question.
pub(super) const MAX_OPTIONS: usize = 8;
/// Longest question, in characters.
const MAX_QUESTION_CHARS: usize = 2000;
/// Longest option, in characters.
const MAX_OPTION_CHARS: usize = 200;

/// Asks the user.
pub struct ClarifyTool {
    asker: Option<Arc<dyn Approver>>,
}

impl ClarifyTool {
    /// A `clarify` whose questions go to `asker` (the surface's approver); none = nobody.
    pub fn new(asker: Option<Arc<dyn Approver>>) -> Self {
        ClarifyTool { asker }
    }
}

#[derive(Deserialize)]
struct Args {
    question: String,
    #[serde(default)]
    options: Vec<String>,
}

impl Args {
    fn check(self) -> Result<Question, ToolError> {
        let question = self.question.trim();
        if question.is_empty() {
            return Err(ToolError::new("clarify: question is empty"));
        }
        if question.chars().count() > MAX_QUESTION_CHARS {
            return Err(ToolError(format!(
                "clarify: the question is longer than {MAX_QUESTION_CHARS} characters; ask something shorter"
            )));
        }
        if self.options.len() > MAX_OPTIONS {
            return Err(ToolError(format!(
                "clarify: {} options, at most {MAX_OPTIONS}",
                self.options.len()
            )));
        }
        let options: Vec<String> = self.options.iter().map(|o| o.trim().to_string()).collect();
        if options
            .iter()
            .any(|o| o.is_empty() || o.chars().count() > MAX_OPTION_CHARS)
        {
            return Err(ToolError(format!(
                "clarify: every option needs 1 to {MAX_OPTION_CHARS} characters"
            )));
        }
        Ok(Question {
            question: question.to_string(),
            options,
        })
    }
}

#[async_trait]
impl Tool for ClarifyTool {
    fn name(&self) -> &str {
        "clarify"
    }

    fn description(&self) -> &str {
        "Ask the user a question and wait for the answer. Only when you cannot reasonably decide yourself; offer options when the choices are known."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "question":{"type":"string"},
                "options":{"type":"array","items":{"type":"string"},"maxItems":8}
              },
              "required":["question"]
            }"#,
        )
    }

    /// The answer is the user's own words, not outside content.
    fn untrusted_source(&self, _args: &Value) -> Option<String> {
        None
    }

    fn summary(&self, args: &Value) -> String {
        let question = args.get("question").and_then(Value::as_str).unwrap_or("");
        crate::text::truncate(question, 80).into_owned()
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        let options = args
            .get("options")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        Some(json!({"options": options}))
    }

    /// Two questions of one batch are asked one after the other, never at once.
    fn runs_in_call_order(&self) -> bool {
        true
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let question = decode_args::<Args>(self.name(), args)?.check()?;
        let Some(asker) = &self.asker else {
            return Ok(NO_USER_ANSWER.to_string());
        };
        let answer = tokio::select! {
            answer = asker.clarify(&question, &ctx.cancel) => answer,
            () = ctx.cancel.cancelled() => QuestionAnswer::Cancelled,
        };
        match answer {
            QuestionAnswer::Answered(text) => Ok(format!("the user answered: {text}")),
            QuestionAnswer::NoUser => Ok(NO_USER_ANSWER.to_string()),
            QuestionAnswer::Expired => Ok(EXPIRED_ANSWER.to_string()),
            QuestionAnswer::Cancelled => Err(ToolError::new(
                "clarify: the user interrupted the turn instead of answering",
            )),
        }
    }
}

/// The answer a reply gives to a question with these `options`: an option typed out, else
/// the option of that number (`2`), else the reply itself, trimmed; `None` for an empty
/// reply. (Options `1`, `3`, `5`: typing `3` answers `3`.)
pub fn answer_from_reply(options: &[String], reply: &str) -> Option<String> {
    let reply = reply.trim();
    if reply.is_empty() {
        return None;
    }
    if let Some(same) = options.iter().find(|o| o.eq_ignore_ascii_case(reply)) {
        return Some(same.clone());
    }
    let chosen = reply
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| options.get(i));
    Some(chosen.cloned().unwrap_or_else(|| reply.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_util::sync::CancellationToken;

    struct Answering(QuestionAnswer);

    #[async_trait]
    impl Approver for Answering {
        async fn ask(
            &self,
            _items: &[super::super::approval::ApprovalItem],
            _cancel: &CancellationToken,
        ) -> super::super::approval::ApprovalAnswer {
            super::super::approval::ApprovalAnswer::Deny
        }

        async fn clarify(
            &self,
            question: &Question,
            _cancel: &CancellationToken,
        ) -> QuestionAnswer {
            assert_eq!(question.options, ["yes", "no"]);
            self.0.clone()
        }
    }

    fn ctx() -> ToolContext {
        ToolContext::in_dir(&std::env::temp_dir())
    }

    const ASK: &str = r#"{"question":"Ship it?","options":[" yes","no"]}"#;

    #[tokio::test]
    async fn nobody_to_ask_says_so_and_an_answer_is_passed_on() {
        assert_eq!(
            ClarifyTool::new(None).call(ASK, &ctx()).await,
            Ok(NO_USER_ANSWER.into())
        );
        let tool = ClarifyTool::new(Some(Arc::new(Answering(QuestionAnswer::Answered(
            "no".into(),
        )))));
        assert_eq!(
            tool.call(ASK, &ctx()).await,
            Ok("the user answered: no".into())
        );
        let tool = ClarifyTool::new(Some(Arc::new(Answering(QuestionAnswer::Cancelled))));
        assert!(tool.call(ASK, &ctx()).await.is_err());
    }

    #[tokio::test]
    async fn bad_questions_are_refused() {
        let tool = ClarifyTool::new(None);
        for args in [
            r#"{"question":"  "}"#.to_string(),
            json!({"question": "q", "options": vec!["a"; 9]}).to_string(),
            json!({"question": "q", "options": ["a", " "]}).to_string(),
        ] {
            assert!(tool.call(&args, &ctx()).await.is_err(), "{args}");
        }
    }

    #[test]
    fn replies_choose_options_by_number_or_answer_in_words() {
        let q = ["red".to_string(), "blue".to_string()];
        assert_eq!(answer_from_reply(&q, " 2 ").as_deref(), Some("blue"));
        assert_eq!(answer_from_reply(&q, "3").as_deref(), Some("3"));
        assert_eq!(
            answer_from_reply(&q, "green, please").as_deref(),
            Some("green, please")
        );
        assert_eq!(answer_from_reply(&q, "  "), None);
        assert_eq!(answer_from_reply(&q, "BLUE").as_deref(), Some("blue"));
        let odd = ["1".to_string(), "3".to_string(), "5".to_string()];
        assert_eq!(answer_from_reply(&odd, "3").as_deref(), Some("3"));
        assert_eq!(answer_from_reply(&odd, "2").as_deref(), Some("3"));
    }
}
