use super::*;
use crate::plan::{PlanLimits, PlanStore};

fn store() -> Option<Arc<PlanStore>> {
    Some(Arc::new(PlanStore::new(PlanLimits::default())))
}

#[test]
fn default_registry_order_is_stable() {
    let r = build_registry(&ToolSelection::default(), store(), None, Vec::new()).expect("builds");
    assert_eq!(r.names(), BUILTIN_TOOL_NAMES.to_vec());
    let defs: Vec<&str> = r.defs().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(defs, BUILTIN_TOOL_NAMES.to_vec());
}

#[test]
fn plan_tool_exactly_when_a_store_exists() {
    let r = build_registry(&ToolSelection::default(), None, None, Vec::new()).expect("builds");
    assert!(r.get("plan").is_none());
    assert!(
        build_registry(&ToolSelection::default(), store(), None, Vec::new())
            .expect("builds")
            .get("plan")
            .is_some()
    );
}

#[test]
fn enabled_selects_and_orders_disabled_removes() {
    let sel = ToolSelection {
        enabled: vec!["shell".into(), "read_file".into(), "patch".into()],
        disabled: vec!["patch".into()],
    };
    let r = build_registry(&sel, store(), None, Vec::new()).expect("builds");
    assert_eq!(r.names(), vec!["shell", "read_file"]);
}

#[test]
fn unknown_tool_names_are_errors() {
    let sel = ToolSelection {
        enabled: vec![],
        disabled: vec!["shel".into()],
    };
    let e = build_registry(&sel, None, None, Vec::new())
        .err()
        .expect("error");
    assert!(e.to_string().contains("unknown tool \"shel\""), "{e}");
}

#[test]
fn every_schema_is_an_object_with_required_fields_declared() {
    let r = build_registry(&ToolSelection::default(), store(), None, Vec::new()).expect("builds");
    for def in r.defs() {
        assert_eq!(def.parameters["type"], "object", "{}", def.name);
        let props = def.parameters["properties"]
            .as_object()
            .expect("properties");
        if let Some(req) = def.parameters.get("required").and_then(|v| v.as_array()) {
            for field in req {
                assert!(
                    props.contains_key(field.as_str().expect("str")),
                    "{}",
                    def.name
                );
            }
        }
    }
}
