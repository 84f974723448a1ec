//! The checks a new run passes before the metadb writes any of it: a run the
//! claim could never finish (a dependency outside the run, a cycle, a vote
//! threshold no voter list can reach) is refused up front.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::Action;
use super::{NewExecution, NewRun, is_valid_execution_name};
use crate::error::{CoreError, Result};

impl NewRun {
    /// Validates the run and its executions; the first problem found is the error.
    pub fn validate(&self) -> Result<()> {
        let run_err = |field: &str, message: String| CoreError::InvalidRun {
            field: field.to_string(),
            message,
        };
        if self.commit_id.trim().is_empty() {
            return Err(run_err("commit_id", "is empty".into()));
        }
        if self.max_parallel == 0 {
            return Err(run_err("max_parallel", "must be at least 1, not 0".into()));
        }
        if let Some(problem) = self.checkout.as_ref().and_then(|c| c.problem()) {
            return Err(run_err("checkout", problem));
        }
        validate_executions(&self.executions)
    }
}

/// Checks a run's executions on their own: ids, references and cycles.
pub fn validate_executions(executions: &[NewExecution]) -> Result<()> {
    let bad = |e: &NewExecution, field: &str, message: String| CoreError::InvalidExecution {
        execution: e.execution_id.clone(),
        field: field.to_string(),
        message,
    };
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(executions.len());
    for (i, e) in executions.iter().enumerate() {
        if !is_valid_execution_name(&e.execution_id) {
            return Err(bad(
                e,
                "execution_id",
                "is not a valid step functions execution name (1 to 80 characters, no whitespace or <>{}[]?*\"#%\\^|~`$&,;:/)".into(),
            ));
        }
        if index.insert(&e.execution_id, i).is_some() {
            return Err(bad(e, "execution_id", "appears twice in the run".into()));
        }
        if !e.priority.is_finite() {
            return Err(bad(
                e,
                "priority",
                format!("{:?} is not a finite number", e.priority),
            ));
        }
        if e.voters.is_empty() {
            return Err(bad(e, "voters", "is empty: nobody could approve it".into()));
        }
        for (field, min) in [
            ("min_approval_count", e.min_approval_count),
            ("min_rejection_count", e.min_rejection_count),
        ] {
            if min == 0 || min as usize > e.voters.len() {
                return Err(bad(
                    e,
                    field,
                    format!("{min} is not between 1 and the {} voters", e.voters.len()),
                ));
            }
        }
    }
    for e in executions {
        let mut seen = HashSet::new();
        for w in &e.wait_for {
            if !index.contains_key(w.as_str()) {
                return Err(bad(
                    e,
                    "wait_for",
                    format!("{w:?} is not an execution of this run"),
                ));
            }
            if *w == e.execution_id {
                return Err(bad(e, "wait_for", "waits for itself".into()));
            }
            if !seen.insert(w) {
                return Err(bad(e, "wait_for", format!("{w:?} is listed twice")));
            }
        }
        let mut seen = HashSet::new();
        for a in &e.wait_accounts {
            if !seen.insert(a) {
                return Err(bad(e, "wait_accounts", format!("{a:?} is listed twice")));
            }
            if *a == e.account_name {
                return Err(bad(
                    e,
                    "wait_accounts",
                    format!("waits for its own account {a:?}"),
                ));
            }
        }
    }
    if let Some(stuck) = find_cycle(executions, &index) {
        return Err(bad(
            &executions[stuck],
            "wait_for",
            "is part of a dependency cycle (through wait_for or wait_accounts): the run could never finish".into(),
        ));
    }
    Ok(())
}

/// Kahn's algorithm over executions plus one node per (account, action) that
/// waits for every execution of that account: returns an execution that never
/// became ready, if any.
fn find_cycle(executions: &[NewExecution], index: &HashMap<&str, usize>) -> Option<usize> {
    let n = executions.len();
    let mut anchors: BTreeMap<(&str, Action), usize> = BTreeMap::new();
    for e in executions {
        let next = n + anchors.len();
        anchors
            .entry((e.account_name.as_str(), e.action))
            .or_insert(next);
    }
    let total = n + anchors.len();
    // dependents[d] = nodes that wait for d.
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); total];
    let mut pending = vec![0usize; total];
    for (i, e) in executions.iter().enumerate() {
        for w in &e.wait_for {
            if let Some(&d) = index.get(w.as_str()) {
                dependents[d].push(i);
                pending[i] += 1;
            }
        }
        if let Some(&anchor) = anchors.get(&(e.account_name.as_str(), e.action)) {
            dependents[i].push(anchor);
            pending[anchor] += 1;
        }
        for a in &e.wait_accounts {
            // An account with no execution of this action in the run is nothing to wait for.
            if let Some(&anchor) = anchors.get(&(a.as_str(), e.action)) {
                dependents[anchor].push(i);
                pending[i] += 1;
            }
        }
    }
    let mut ready: Vec<usize> = (0..total).filter(|&t| pending[t] == 0).collect();
    let mut done = 0;
    while let Some(t) = ready.pop() {
        done += 1;
        for &d in &dependents[t] {
            pending[d] -= 1;
            if pending[d] == 0 {
                ready.push(d);
            }
        }
    }
    if done == total {
        None
    } else {
        (0..n).find(|&i| pending[i] > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deploy::NewExecution;
    use crate::path::RepoPath;

    pub(crate) fn exec(id: &str, account: &str, wait_for: &[&str]) -> NewExecution {
        NewExecution {
            execution_id: id.to_string(),
            is_rollback: false,
            cfg_path: RepoPath::new(id).unwrap(),
            cfg_deps: vec![],
            action: Action::Apply,
            plan_command: "terragrunt plan".into(),
            apply_command: "terragrunt apply".into(),
            new_providers: vec![],
            account_name: account.into(),
            account_path: account.into(),
            account_deps: vec![],
            voters: vec!["ops@example.com".into()],
            min_approval_count: 1,
            min_rejection_count: 1,
            plan_role_arn: "arn:aws:iam::1:role/plan".into(),
            apply_role_arn: "arn:aws:iam::1:role/apply".into(),
            priority: 1.0,
            wait_for: wait_for.iter().map(|s| s.to_string()).collect(),
            wait_accounts: vec![],
            account_max_parallel: None,
        }
    }

    fn run(executions: Vec<NewExecution>) -> NewRun {
        NewRun {
            pr_id: 1,
            commit_id: "c8c5f6af".into(),
            base_ref: "refs/heads/main".into(),
            head_ref: "refs/heads/feature".into(),
            base_sha: "aaaa".into(),
            head_sha: "bbbb".into(),
            max_parallel: 4,
            fail_fast: false,
            trunk_seq: 1,
            checkout: None,
            executions,
        }
    }

    fn err(r: NewRun) -> String {
        r.validate().unwrap_err().to_string()
    }

    #[test]
    fn a_valid_run_passes() {
        let mut b = exec("b", "dev", &["a"]);
        b.wait_accounts = vec!["shared".into()];
        run(vec![exec("a", "dev", &[]), b, exec("s", "shared", &[])])
            .validate()
            .unwrap();
    }

    #[test]
    fn bad_runs_name_the_problem() {
        assert_eq!(
            err(run(vec![exec("a", "dev", &["nope"])])),
            "execution \"a\": wait_for: \"nope\" is not an execution of this run"
        );
        assert_eq!(
            err(run(vec![exec("a", "dev", &[]), exec("a", "dev", &[])])),
            "execution \"a\": execution_id: appears twice in the run"
        );
        assert!(
            err(run(vec![exec("a b", "dev", &[])]))
                .starts_with("execution \"a b\": execution_id: is not a valid")
        );
        let mut r = run(vec![]);
        r.max_parallel = 0;
        assert_eq!(err(r), "run: max_parallel: must be at least 1, not 0");
        let mut r = run(vec![]);
        r.checkout = Some(crate::port::CachedCheckout {
            key: "checkouts/c8c5f6af/x.tar".into(),
            sha256: "ABC".into(),
        });
        assert_eq!(
            err(r.clone()),
            "run: checkout: sha256 \"ABC\" is not 64 lowercase hex digits"
        );
        r.checkout = Some(crate::port::CachedCheckout::of("c8c5f6af", b"tar"));
        r.validate().unwrap();
        r.checkout.as_mut().unwrap().key = " ".into();
        assert_eq!(err(r), "run: checkout: key is empty");
        let mut e = exec("a", "dev", &[]);
        e.min_approval_count = 2;
        assert_eq!(
            err(run(vec![e])),
            "execution \"a\": min_approval_count: 2 is not between 1 and the 1 voters"
        );
    }

    #[test]
    fn cycles_are_refused() {
        let e = err(run(vec![
            exec("a", "dev", &["b"]),
            exec("b", "dev", &["a"]),
        ]));
        assert!(e.contains("dependency cycle"), "{e}");
        // Through accounts: dev waits for shared, while a shared unit waits for a dev unit.
        let mut d = exec("d", "dev", &[]);
        d.wait_accounts = vec!["shared".into()];
        let e = err(run(vec![d, exec("s", "shared", &["d"])]));
        assert!(e.contains("dependency cycle"), "{e}");
        // Waiting for an account with no execution in the run is fine.
        let mut d = exec("d", "dev", &[]);
        d.wait_accounts = vec!["prod".into()];
        run(vec![d]).validate().unwrap();
    }
}
