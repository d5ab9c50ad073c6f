//! What a trusted child asks its parent, and the parent's answers: one JSON line each way
//! (the child's requests on its stdout among its event lines, the answers on its stdin).
//! A call that would ask in the child is asked on the parent's approver — the terminal's
//! prompt, the web UI's card, Telegram's buttons — labelled with the sub-agent.

use serde::{Deserialize, Serialize};

use crate::policy::DangerClass;
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Question, QuestionAnswer};

/// A request line: `{"odek_subagent_request": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestLine {
    /// The request.
    pub odek_subagent_request: Request,
}

/// What the child asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Its id within the child (the answer carries it back).
    pub id: u64,
    /// An approval or a question.
    #[serde(flatten)]
    pub ask: Ask,
}

/// An approval of calls, or a `clarify` question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ask {
    /// Calls that need approval.
    Approval {
        /// The calls.
        items: Vec<AskedItem>,
    },
    /// A question.
    Question {
        /// The question.
        question: String,
        /// Its options.
        options: Vec<String>,
    },
}

/// One call of an approval, as it crosses the pipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskedItem {
    /// Tool name.
    pub tool: String,
    /// What it acts on.
    pub resource: String,
    /// Its class.
    pub class: DangerClass,
    /// Why.
    pub reason: String,
    /// What trusting it trusts, when narrower than its class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// The parent's answer line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerLine {
    /// The request answered.
    pub id: u64,
    /// `approve`, `deny`, `trust`, `cancelled`, `expired`, `no_user`, or `answered`.
    pub answer: String,
    /// The user's words, for an answered question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl AskedItem {
    /// The item as it crosses the pipe.
    pub fn from_item(item: &ApprovalItem) -> Self {
        AskedItem {
            tool: item.tool.clone(),
            resource: item.resource.clone(),
            class: item.class,
            reason: item.reason.clone(),
            scope: item.scope.clone(),
        }
    }

    /// The item the parent's approver is asked about, labelled with the sub-agent.
    pub fn labelled(&self, label: &str) -> ApprovalItem {
        ApprovalItem {
            tool: format!("{label}: {}", self.tool),
            resource: self.resource.clone(),
            class: self.class,
            reason: self.reason.clone(),
            scope: self.scope.clone(),
        }
    }
}

/// An approval answer as a word, and back.
pub fn approval_word(answer: ApprovalAnswer) -> &'static str {
    match answer {
        ApprovalAnswer::Approve => "approve",
        ApprovalAnswer::Deny => "deny",
        ApprovalAnswer::TrustClasses => "trust",
        ApprovalAnswer::Cancelled => "cancelled",
        ApprovalAnswer::Expired => "expired",
    }
}

/// The approval answer of a word (anything unknown refuses).
pub fn approval_of(word: &str) -> ApprovalAnswer {
    match word {
        "approve" => ApprovalAnswer::Approve,
        "trust" => ApprovalAnswer::TrustClasses,
        "cancelled" => ApprovalAnswer::Cancelled,
        "expired" => ApprovalAnswer::Expired,
        _ => ApprovalAnswer::Deny,
    }
}

/// A question's answer as a line.
pub fn question_answer_line(id: u64, answer: QuestionAnswer) -> AnswerLine {
    let (word, text) = match answer {
        QuestionAnswer::Answered(text) => ("answered", Some(text)),
        QuestionAnswer::NoUser => ("no_user", None),
        QuestionAnswer::Cancelled => ("cancelled", None),
        QuestionAnswer::Expired => ("expired", None),
    };
    AnswerLine {
        id,
        answer: word.to_string(),
        text,
    }
}

/// A question's answer from its line.
pub fn question_answer_of(line: &AnswerLine) -> QuestionAnswer {
    match (line.answer.as_str(), &line.text) {
        ("answered", Some(text)) => QuestionAnswer::Answered(text.clone()),
        ("cancelled", _) => QuestionAnswer::Cancelled,
        ("expired", _) => QuestionAnswer::Expired,
        _ => QuestionAnswer::NoUser,
    }
}

impl Ask {
    /// The question of a `Question` ask.
    pub fn question(question: &Question) -> Ask {
        Ask::Question {
            question: question.question.clone(),
            options: question.options.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_back() {
        let line = RequestLine {
            odek_subagent_request: Request {
                id: 7,
                ask: Ask::Approval {
                    items: vec![AskedItem {
                        tool: "shell".into(),
                        resource: "pip install rich".into(),
                        class: DangerClass::Install,
                        reason: "installs".into(),
                        scope: None,
                    }],
                },
            },
        };
        let text = serde_json::to_string(&line).expect("json");
        assert!(
            text.starts_with(r#"{"odek_subagent_request":{"id":7,"kind":"approval","items":"#),
            "{text}"
        );
        assert_eq!(
            serde_json::from_str::<RequestLine>(&text).expect("back"),
            line
        );
        for answer in [
            ApprovalAnswer::Approve,
            ApprovalAnswer::Deny,
            ApprovalAnswer::TrustClasses,
            ApprovalAnswer::Cancelled,
            ApprovalAnswer::Expired,
        ] {
            assert_eq!(approval_of(approval_word(answer)), answer);
        }
        let asked = AnswerLine {
            id: 1,
            answer: "answered".into(),
            text: Some("blue".into()),
        };
        assert_eq!(
            question_answer_of(&asked),
            QuestionAnswer::Answered("blue".into())
        );
        assert_eq!(
            question_answer_of(&question_answer_line(2, QuestionAnswer::NoUser)),
            QuestionAnswer::NoUser
        );
    }
}
