//! The child's `dangerous` policy: capped by its trust level and `max_risk`, whatever the
//! parent's policy or `--yolo` says.

use crate::danger_policy::{Action, DangerClass, DangerPolicy};

use super::Trust;

/// The policy of a child. `untrusted`: only `safe` and `local_write` run — and of those only
/// what the parent does not deny (a read-only parent's child writes nothing); every other
/// class is denied without asking (explicit per-class denials, which a global `allow`
/// cannot lift), the allowlist is dropped and nobody is asked. `trusted`: the parent's
/// policy. Either way, `max_risk` denies every class ranked above it.
pub fn child_policy(
    parent: &DangerPolicy,
    trust: Trust,
    max_risk: Option<DangerClass>,
) -> DangerPolicy {
    let mut policy = match trust {
        Trust::Trusted => parent.clone(),
        Trust::Untrusted => DangerPolicy {
            action: None,
            non_interactive: Some(Action::Deny),
            classes: DangerClass::ALL
                .into_iter()
                .map(|class| {
                    let action = match class {
                        DangerClass::Safe | DangerClass::LocalWrite
                            if parent.decide_class(class) != Action::Deny =>
                        {
                            Action::Allow
                        }
                        _ => Action::Deny,
                    };
                    (class, action)
                })
                .collect(),
            allowlist: Vec::new(),
            denylist: parent.denylist.clone(),
        },
    };
    if let Some(cap) = max_risk {
        for class in DangerClass::ALL.into_iter().filter(|c| *c > cap) {
            policy.classes.insert(class, Action::Deny);
        }
        // An allowlisted command is allowed before its class is looked at: under a cap
        // nothing may skip the class.
        policy.allowlist.clear();
    }
    policy
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yolo() -> DangerPolicy {
        DangerPolicy {
            action: Some(Action::Allow),
            allowlist: vec!["curl https://example.com".into()],
            ..DangerPolicy::default()
        }
    }

    #[test]
    fn an_untrusted_child_only_reads_and_writes_locally_whatever_the_parent_allows() {
        let p = child_policy(&yolo(), Trust::Untrusted, None);
        for class in DangerClass::ALL {
            let expected = match class {
                DangerClass::Safe | DangerClass::LocalWrite => Action::Allow,
                _ => Action::Deny,
            };
            assert_eq!(p.decide_class(class), expected, "{class}");
        }
        assert!(p.allowlist.is_empty());
        assert_eq!(p.non_interactive_action(), Action::Deny);
    }

    #[test]
    fn an_untrusted_child_of_a_parent_that_denies_writes_writes_nothing() {
        let mut read_only = DangerPolicy::default();
        read_only
            .classes
            .insert(DangerClass::LocalWrite, Action::Deny);
        let p = child_policy(&read_only, Trust::Untrusted, None);
        assert_eq!(p.decide_class(DangerClass::LocalWrite), Action::Deny);
        assert_eq!(p.decide_class(DangerClass::Safe), Action::Allow);
    }

    #[test]
    fn a_trusted_child_keeps_the_parents_policy_under_its_cap() {
        let p = child_policy(&yolo(), Trust::Trusted, Some(DangerClass::NetworkEgress));
        assert_eq!(p.decide_class(DangerClass::Install), Action::Allow);
        assert_eq!(p.decide_class(DangerClass::NetworkEgress), Action::Allow);
        assert_eq!(p.decide_class(DangerClass::NetworkUpload), Action::Deny);
        assert_eq!(p.decide_class(DangerClass::CodeExecution), Action::Deny);
        assert!(p.allowlist.is_empty(), "a cap drops the allowlist");
        assert_eq!(
            child_policy(&yolo(), Trust::Trusted, None).allowlist,
            ["curl https://example.com"]
        );
        let capped = child_policy(
            &DangerPolicy::default(),
            Trust::Untrusted,
            Some(DangerClass::Safe),
        );
        assert_eq!(capped.decide_class(DangerClass::LocalWrite), Action::Deny);
        assert_eq!(capped.decide_class(DangerClass::Safe), Action::Allow);
    }
}
