//! What a trusted child asks its parent, and the parent's answers: one JSON line each way
//! (the child's requests on its stdout among its event lines, the answers on its stdin).
//! A call that would ask in the child is asked on the parent's approver — the terminal's
//! prompt, the web UI's card, Telegram's buttons — labelled with the sub-agent.

pub use crate::protocol::subagent::{AnswerLine, Ask, AskedItem, Request, RequestLine};
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Question, QuestionAnswer};

/// An approval's item as it crosses the pipe.
pub fn asked_item(item: &ApprovalItem) -> AskedItem {
    AskedItem {
        tool: item.tool.clone(),
        resource: item.resource.clone(),
        class: item.class,
        // The parts of a command cross the pipe in the reason's text.
        reason: item.reasons(),
        scope: item.scope.clone(),
    }
}

/// The item the parent's approver is asked about, labelled with the sub-agent.
pub fn labelled(item: &AskedItem, label: &str) -> ApprovalItem {
    ApprovalItem {
        tool: format!("{label}: {}", item.tool),
        resource: item.resource.clone(),
        class: item.class,
        reason: item.reason.clone(),
        scope: item.scope.clone(),
        call_id: None,
        parts: Vec::new(),
        arguments: None,
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

/// The ask of a `clarify` question.
pub fn question_ask(question: &Question) -> Ask {
    Ask::Question {
        question: question.question.clone(),
        options: question.options.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::danger_policy::DangerClass;

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
