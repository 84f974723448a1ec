//! Rollback of new provider resources (the seed's "Rollback New Provider
//! Resources"): when a run has failed, every unit whose apply recorded new
//! provider resources gets one more execution that destroys exactly those
//! resources with `-target`, so a revert of the pull request does not leave
//! resources in state whose provider configuration is gone. Rollbacks run
//! dependents first, like any destroy.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{
    Action, ExecutionRecord, ExecutionStatus, MAX_EXECUTION_NAME_LEN, NewExecution,
    is_valid_execution_name,
};
use crate::path::RepoPath;

/// One rollback execution to add to a run, with the resources it destroys
/// (stored as its `new_resources`, so the task and the voters see the targets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewRollback {
    /// The rollback execution: a destroy of its source unit, `is_rollback` set.
    pub execution: NewExecution,
    /// The resource addresses it destroys with `-target`.
    pub resources: Vec<String>,
}

/// The rollbacks a finished run needs: none unless some execution failed, and
/// none once rollbacks exist (a rollback is never rolled back, and repeated
/// calls plan nothing new). `executions` is every execution of the run.
pub fn plan_rollbacks(executions: &[ExecutionRecord]) -> Vec<NewRollback> {
    let failed = executions
        .iter()
        .any(|e| e.status == ExecutionStatus::Failed);
    if !failed || executions.iter().any(|e| e.is_rollback) {
        return Vec::new();
    }
    // A failed apply may have created part of its resources before failing:
    // whatever it recorded is rolled back too.
    let sources: Vec<&ExecutionRecord> = executions
        .iter()
        .filter(|e| {
            e.action == Action::Apply
                && !e.new_resources.is_empty()
                && matches!(
                    e.status,
                    ExecutionStatus::Succeeded | ExecutionStatus::Failed
                )
        })
        .collect();
    let depends = Dependencies::of(executions);
    sources
        .iter()
        .map(|source| {
            // Dependents first: this rollback waits for the rollback of every
            // unit that (transitively) depends on this one.
            let wait_for = sources
                .iter()
                .filter(|other| {
                    other.execution_id != source.execution_id && depends.on(other, source)
                })
                .map(|other| rollback_execution_id(&other.execution_id))
                .collect();
            NewRollback {
                execution: NewExecution {
                    execution_id: rollback_execution_id(&source.execution_id),
                    is_rollback: true,
                    cfg_path: source.cfg_path.clone(),
                    cfg_deps: source.cfg_deps.clone(),
                    action: Action::Destroy,
                    plan_command: destroy_targets(&source.plan_command, &source.new_resources),
                    // The apply applies the saved (destroy) plan, as for any unit.
                    apply_command: source.apply_command.clone(),
                    new_providers: source.new_providers.clone(),
                    account_name: source.account_name.clone(),
                    account_path: source.account_path.clone(),
                    account_deps: source.account_deps.clone(),
                    voters: source.voters.clone(),
                    min_approval_count: source.min_approval_count,
                    min_rejection_count: source.min_rejection_count,
                    plan_role_arn: source.plan_role_arn.clone(),
                    apply_role_arn: source.apply_role_arn.clone(),
                    priority: source.priority,
                    wait_for,
                    // Rollbacks order among themselves through `wait_for` only:
                    // the run's account counters count the original executions.
                    wait_accounts: Vec::new(),
                    // The claim caps an account by its name, rollbacks included.
                    account_max_parallel: None,
                },
                resources: source.new_resources.clone(),
            }
        })
        .collect()
}

/// The execution id of the rollback of `original`: the original's id with
/// `-rb` before its three random digits (`run-1-c8c5-dev-baz-rb-729`),
/// shortened from the middle to stay a valid 80-character execution name.
pub fn rollback_execution_id(original: &str) -> String {
    let (head, nonce) = match original.rsplit_once('-') {
        Some((head, nonce)) if !nonce.is_empty() && nonce.chars().all(|c| c.is_ascii_digit()) => {
            (head, nonce)
        }
        _ => (original, ""),
    };
    let tail = if nonce.is_empty() {
        "-rb".to_owned()
    } else {
        format!("-rb-{nonce}")
    };
    let budget = MAX_EXECUTION_NAME_LEN.saturating_sub(tail.len());
    let head: String = head.chars().take(budget).collect();
    let id = format!("{head}{tail}");
    debug_assert!(is_valid_execution_name(&id) || !is_valid_execution_name(original));
    id
}

/// `plan_command` turned into a plan that destroys only `resources`: the flags
/// go right after the `plan` word of its terraform/terragrunt invocation, so a
/// command that pipes or chains (`… plan | tee log`, `… plan && notify`) still
/// gives them to terraform. Each address is single-quoted for the shell the
/// command runs in, because addresses carry brackets and double quotes
/// (`aws_s3_bucket.b["logs"]`).
pub fn destroy_targets(plan_command: &str, resources: &[String]) -> String {
    let mut args = vec!["-destroy".to_string()];
    args.extend(
        resources
            .iter()
            .map(|r| format!("-target={}", shell_quote(r))),
    );
    crate::terraform::insert_args(plan_command, "plan", &args)
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Which units of the run depend on which, through directory dependencies
/// (`cfg_deps`) and account dependencies (`account_deps`), transitively.
struct Dependencies {
    /// Unit → the units it depends on directly (paths of this run only).
    deps: BTreeMap<RepoPath, BTreeSet<RepoPath>>,
    /// Account → the accounts it depends on directly.
    account_deps: BTreeMap<String, BTreeSet<String>>,
}

impl Dependencies {
    fn of(executions: &[ExecutionRecord]) -> Self {
        let mut deps: BTreeMap<RepoPath, BTreeSet<RepoPath>> = BTreeMap::new();
        let mut account_deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for e in executions {
            deps.entry(e.cfg_path.clone())
                .or_default()
                .extend(e.cfg_deps.iter().cloned());
            account_deps
                .entry(e.account_name.clone())
                .or_default()
                .extend(e.account_deps.iter().cloned());
        }
        Dependencies { deps, account_deps }
    }

    /// Whether `dependent` depends on `dependency`, directly or not.
    fn on(&self, dependent: &ExecutionRecord, dependency: &ExecutionRecord) -> bool {
        reaches(&self.deps, &dependent.cfg_path, &dependency.cfg_path)
            || (dependent.account_name != dependency.account_name
                && reaches(
                    &self.account_deps,
                    &dependent.account_name,
                    &dependency.account_name,
                ))
    }
}

fn reaches<T: Ord + Clone>(edges: &BTreeMap<T, BTreeSet<T>>, from: &T, to: &T) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.clone()];
    while let Some(node) = stack.pop() {
        for next in edges.get(&node).into_iter().flatten() {
            if next == to {
                return true;
            }
            if seen.insert(next.clone()) {
                stack.push(next.clone());
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> RepoPath {
        RepoPath::new(s).unwrap()
    }

    fn record(id: &str, path: &str, deps: &[&str], account: &str) -> ExecutionRecord {
        ExecutionRecord {
            run_id: 1,
            execution_id: id.into(),
            is_rollback: false,
            pr_id: 7,
            commit_id: "abcd".into(),
            base_ref: "main".into(),
            head_ref: "feature".into(),
            cfg_path: p(path),
            cfg_deps: deps.iter().map(|d| p(d)).collect(),
            action: Action::Apply,
            status: ExecutionStatus::Succeeded,
            status_reason: None,
            plan_command: format!("terraform -chdir={path} plan"),
            apply_command: format!("terraform -chdir={path} apply"),
            new_providers: vec!["registry.terraform.io/hashicorp/null".into()],
            new_resources: Vec::new(),
            account_name: account.into(),
            account_path: account.into(),
            account_deps: Vec::new(),
            voters: vec!["a@example.com".into()],
            github_voters: Vec::new(),
            approval_voters: Vec::new(),
            min_approval_count: 1,
            rejection_voters: Vec::new(),
            min_rejection_count: 1,
            plan_role_arn: "arn:plan".into(),
            apply_role_arn: "arn:apply".into(),
            priority: 1.0,
            wait_for: Vec::new(),
            wait_accounts: Vec::new(),
            sfn_execution_arn: None,
            decision: None,
            checkout: None,
            created_at: 0,
            claimed_at: None,
            finished_at: None,
            updated_at: 0,
        }
    }

    fn with_resources(mut e: ExecutionRecord, resources: &[&str]) -> ExecutionRecord {
        e.new_resources = resources.iter().map(|r| r.to_string()).collect();
        e
    }

    fn failed(mut e: ExecutionRecord) -> ExecutionRecord {
        e.status = ExecutionStatus::Failed;
        e
    }

    #[test]
    fn nothing_to_roll_back_unless_something_failed() {
        let run = [with_resources(
            record("run-7-abcd-dev-vpc-001", "dev/vpc", &[], "dev"),
            &["null_resource.x"],
        )];
        assert!(plan_rollbacks(&run).is_empty());
    }

    #[test]
    fn units_with_new_resources_are_destroyed_by_target_dependents_first() {
        let run = [
            with_resources(
                record("run-7-abcd-dev-vpc-001", "dev/vpc", &[], "dev"),
                &["null_resource.net", "null_resource.peer[\"b\"]"],
            ),
            with_resources(
                record("run-7-abcd-dev-app-002", "dev/app", &["dev/vpc"], "dev"),
                &["null_resource.app"],
            ),
            record("run-7-abcd-dev-db-003", "dev/db", &["dev/vpc"], "dev"),
            failed(record(
                "run-7-abcd-dev-web-004",
                "dev/web",
                &["dev/app"],
                "dev",
            )),
        ];
        let rollbacks = plan_rollbacks(&run);
        let ids: Vec<&str> = rollbacks
            .iter()
            .map(|r| r.execution.execution_id.as_str())
            .collect();
        assert_eq!(
            ids,
            ["run-7-abcd-dev-vpc-rb-001", "run-7-abcd-dev-app-rb-002"]
        );
        let vpc = &rollbacks[0];
        assert!(vpc.execution.is_rollback);
        assert_eq!(vpc.execution.action, Action::Destroy);
        assert_eq!(
            vpc.execution.plan_command,
            "terraform -chdir=dev/vpc plan -destroy -target='null_resource.net' \
             -target='null_resource.peer[\"b\"]'"
        );
        assert_eq!(
            vpc.execution.apply_command,
            "terraform -chdir=dev/vpc apply"
        );
        // app depends on vpc: app's resources go first.
        assert_eq!(vpc.execution.wait_for, ["run-7-abcd-dev-app-rb-002"]);
        assert!(rollbacks[1].execution.wait_for.is_empty());
        assert!(vpc.execution.wait_accounts.is_empty());
        assert_eq!(vpc.resources, run[0].new_resources);
    }

    #[test]
    fn account_dependencies_order_rollbacks_across_accounts() {
        let mut prod_app = with_resources(
            record("run-7-abcd-prod-app-002", "prod/app", &[], "prod"),
            &["null_resource.app"],
        );
        prod_app.account_deps = vec!["shared".into()];
        let run = [
            with_resources(
                record("run-7-abcd-shared-net-001", "shared/net", &[], "shared"),
                &["null_resource.net"],
            ),
            prod_app,
            failed(record("run-7-abcd-prod-web-003", "prod/web", &[], "prod")),
        ];
        let rollbacks = plan_rollbacks(&run);
        assert_eq!(
            rollbacks[0].execution.wait_for,
            ["run-7-abcd-prod-app-rb-002"]
        );
        assert!(rollbacks[1].execution.wait_for.is_empty());
    }

    #[test]
    fn a_failed_apply_rolls_back_what_it_recorded_and_rollbacks_are_planned_once() {
        let run = [failed(with_resources(
            record("run-7-abcd-dev-vpc-001", "dev/vpc", &[], "dev"),
            &["null_resource.half"],
        ))];
        let rollbacks = plan_rollbacks(&run);
        assert_eq!(rollbacks.len(), 1);
        let mut again = run.to_vec();
        let mut existing = record("run-7-abcd-dev-vpc-rb-001", "dev/vpc", &[], "dev");
        existing.is_rollback = true;
        again.push(existing);
        assert!(plan_rollbacks(&again).is_empty());
    }

    #[test]
    fn rollback_ids_stay_valid_execution_names() {
        let long = format!("run-1-abcd-{}-{}-123", "a".repeat(30), "b".repeat(34));
        assert_eq!(long.len(), 80);
        let id = rollback_execution_id(&long);
        assert_eq!(id.len(), 80);
        assert!(id.ends_with("-rb-123"), "{id}");
        assert!(is_valid_execution_name(&id));
        assert_eq!(rollback_execution_id("custom"), "custom-rb");
    }

    #[test]
    fn quotes_in_addresses_survive_the_shell() {
        assert_eq!(
            destroy_targets("terraform plan", &["a.b['x']".into()]),
            r"terraform plan -destroy -target='a.b['\''x'\'']'"
        );
    }

    #[test]
    fn the_destroy_flags_go_to_terraform_not_to_the_end_of_a_pipeline() {
        assert_eq!(
            destroy_targets(
                "terraform init -input=false && terraform plan -input=false -out={plan_file} | tee plan.log",
                &["terraform_data.a".into()]
            ),
            "terraform init -input=false && terraform plan -destroy -target='terraform_data.a' \
             -input=false -out={plan_file} | tee plan.log"
        );
        assert_eq!(
            destroy_targets(
                "terragrunt plan -out={plan_file} 2>&1 && echo planned",
                &["x.y".into()]
            ),
            "terragrunt plan -destroy -target='x.y' -out={plan_file} 2>&1 && echo planned"
        );
    }
}
