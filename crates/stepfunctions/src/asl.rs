//! Structural checks of a rendered definition, beyond what CreateStateMachine
//! validates: every state reachable, every transition to a state that exists,
//! and every Task catching `States.ALL` so no error ends an execution without
//! one of our Fail states naming it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::error::{Result, WorkflowError};

/// Checks a rendered definition; returns its state names.
pub fn check(definition: &str) -> Result<BTreeSet<String>> {
    if let Some(at) = definition.find("${") {
        let snippet: String = definition[at..].chars().take(32).collect();
        return Err(WorkflowError::Definition(format!(
            "unrendered placeholder {snippet:?}"
        )));
    }
    let doc: Value = serde_json::from_str(definition).map_err(WorkflowError::NotJson)?;
    let states = doc
        .get("States")
        .and_then(Value::as_object)
        .ok_or_else(|| def("no \"States\" object"))?;
    let start = doc
        .get("StartAt")
        .and_then(Value::as_str)
        .ok_or_else(|| def("no \"StartAt\""))?;
    let mut edges: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, state) in states {
        let kind = state
            .get("Type")
            .and_then(Value::as_str)
            .ok_or_else(|| def(&format!("state {name:?} has no \"Type\"")))?;
        let targets = transitions(state);
        let terminal = matches!(kind, "Succeed" | "Fail")
            || state.get("End").and_then(Value::as_bool) == Some(true);
        if !terminal && kind != "Choice" && state.get("Next").is_none() {
            return Err(def(&format!(
                "state {name:?} has neither \"Next\" nor \"End\""
            )));
        }
        if kind == "Task" && !catches_all(state) {
            return Err(def(&format!("task {name:?} does not catch \"States.ALL\"")));
        }
        for target in &targets {
            if !states.contains_key(*target) {
                return Err(def(&format!(
                    "state {name:?} goes to {target:?}, which does not exist"
                )));
            }
        }
        edges.insert(name, targets);
    }
    if !states.contains_key(start) {
        return Err(def(&format!(
            "\"StartAt\" names {start:?}, which does not exist"
        )));
    }
    let mut reached = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(name) = stack.pop() {
        if reached.insert(name) {
            stack.extend(edges.get(name).into_iter().flatten().copied());
        }
    }
    let unreachable: Vec<&str> = states
        .keys()
        .map(String::as_str)
        .filter(|n| !reached.contains(n))
        .collect();
    if !unreachable.is_empty() {
        return Err(def(&format!("unreachable states: {unreachable:?}")));
    }
    Ok(states.keys().cloned().collect())
}

fn transitions(state: &Value) -> Vec<&str> {
    let nested = ["Choices", "Catch"]
        .into_iter()
        .flat_map(|key| {
            state
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .map(|item| item.get("Next"));
    [state.get("Next"), state.get("Default")]
        .into_iter()
        .chain(nested)
        .filter_map(|v| v.and_then(Value::as_str))
        .collect()
}

fn catches_all(state: &Value) -> bool {
    state
        .get("Catch")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("ErrorEquals").and_then(Value::as_array))
        .flatten()
        .any(|e| e.as_str() == Some("States.ALL"))
}

fn def(message: &str) -> WorkflowError {
    WorkflowError::Definition(message.to_owned())
}
