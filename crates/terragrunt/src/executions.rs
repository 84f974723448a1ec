//! A deployment plan turned into a run's executions: one per planned unit,
//! with its account's voters and roles, its commands, the providers it adds,
//! and what it waits for as execution ids.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

use crate::error::{EngineError, Result};
use live_ci_core::account::Accounts;
use live_ci_core::deploy::{Action, NewExecution, execution_id};
use live_ci_core::path::RepoPath;
use live_ci_core::terraform::CommandTemplate;

use crate::plan::DeploymentPlan;

/// What every execution of the run shares.
#[derive(Debug, Clone, Copy)]
pub struct RunContext<'a> {
    /// The merged pull request's number.
    pub pr_id: u64,
    /// The merge commit the run deploys.
    pub commit_id: &'a str,
    /// The account configuration: each unit's account, roles and voters.
    pub accounts: &'a Accounts,
    /// The command template of every execution's plan phase.
    pub plan_command: &'a CommandTemplate,
    /// The command template of every execution's apply phase.
    pub apply_command: &'a CommandTemplate,
    /// Providers each unit uses at head and did not at base (applies only).
    pub new_providers: &'a BTreeMap<RepoPath, Vec<String>>,
}

/// The executions of `plan`, in its pool order. Ids are deterministic (the
/// nonce is a hash of commit and unit), so a redelivered merge builds the same
/// run; a collision takes the next nonce.
pub fn executions_from_plan(
    plan: &DeploymentPlan,
    ctx: &RunContext<'_>,
) -> Result<Vec<NewExecution>> {
    let mut ids: BTreeMap<(RepoPath, Action), String> = BTreeMap::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    for u in &plan.units {
        let account = account_of(ctx, &u.path, u.account.as_deref())?;
        let mut nonce = stable_nonce(ctx.commit_id, &u.path, u.action);
        let id = loop {
            let id = execution_id(ctx.pr_id, ctx.commit_id, &account.name, &u.path, nonce);
            if taken.insert(id.clone()) {
                break id;
            }
            nonce = (nonce + 1) % 1000;
        };
        ids.insert((u.path.clone(), u.action), id);
    }
    let mut out = Vec::with_capacity(plan.units.len());
    for u in &plan.units {
        let account = account_of(ctx, &u.path, u.account.as_deref())?;
        // A destroy also waits for the applies of kept units that depended on
        // the removed unit at base (`PlannedUnit::dependencies`).
        let wait_for = u
            .dependencies
            .iter()
            .filter_map(|d| {
                ids.get(&(d.clone(), u.action)).or_else(|| match u.action {
                    Action::Destroy => ids.get(&(d.clone(), Action::Apply)),
                    Action::Apply => None,
                })
            })
            .cloned()
            .collect();
        out.push(NewExecution {
            execution_id: ids[&(u.path.clone(), u.action)].clone(),
            is_rollback: false,
            cfg_path: u.path.clone(),
            cfg_deps: u.dependencies.clone(),
            action: u.action,
            // A removed unit's plan destroys it; the apply applies that plan.
            plan_command: match u.action {
                Action::Apply => ctx.plan_command.for_unit(&u.path),
                Action::Destroy => format!("{} -destroy", ctx.plan_command.for_unit(&u.path)),
            },
            apply_command: ctx.apply_command.for_unit(&u.path),
            new_providers: match u.action {
                Action::Apply => ctx.new_providers.get(&u.path).cloned().unwrap_or_default(),
                Action::Destroy => Vec::new(),
            },
            account_name: account.name.clone(),
            account_path: account.path.clone(),
            account_deps: account.dependencies.clone(),
            voters: account.voters.clone(),
            min_approval_count: account.min_approval_count,
            min_rejection_count: account.min_rejection_count,
            plan_role_arn: account.plan_role_arn.clone(),
            apply_role_arn: account.apply_role_arn.clone(),
            priority: u.priority,
            wait_for,
            wait_accounts: u.waits_for_accounts.clone(),
            account_max_parallel: account.max_parallel,
        });
    }
    Ok(out)
}

fn account_of<'a>(
    ctx: &RunContext<'a>,
    path: &RepoPath,
    planned: Option<&str>,
) -> Result<&'a live_ci_core::account::Account> {
    let found = match planned {
        Some(name) => ctx.accounts.get(name),
        None => ctx.accounts.account_of(path),
    };
    found.ok_or_else(|| EngineError::Plan {
        unit: path.clone(),
        message: "matches no account path in the account configuration".into(),
    })
}

fn stable_nonce(commit: &str, path: &RepoPath, action: Action) -> u16 {
    // FNV-1a: stable across Rust versions, unlike DefaultHasher.
    struct Fnv(u64);
    impl Hasher for Fnv {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for b in bytes {
                self.0 ^= u64::from(*b);
                self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    commit.hash(&mut h);
    path.as_str().hash(&mut h);
    (action == Action::Destroy).hash(&mut h);
    (h.finish() % 1000) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlannedUnit;
    use live_ci_core::account::Account;

    fn p(s: &str) -> RepoPath {
        RepoPath::new(s).unwrap()
    }

    fn unit(path: &str, deps: &[&str], waits: &[&str]) -> PlannedUnit {
        PlannedUnit {
            path: p(path),
            action: Action::Apply,
            account: None,
            dependencies: deps.iter().map(|d| p(d)).collect(),
            waits_for_accounts: waits.iter().map(|w| w.to_string()).collect(),
            priority: 2.0,
            position: 1,
            start: 0.0,
        }
    }

    #[test]
    fn executions_carry_accounts_commands_and_waits_as_ids() {
        let accounts = Accounts::new(
            "accounts.json",
            vec![
                Account {
                    name: "shared".into(),
                    path: "shared".into(),
                    dependencies: vec![],
                    voters: vec!["a@example.com".into(), "b@example.com".into()],
                    github_voters: vec![],
                    min_approval_count: 2,
                    min_rejection_count: 1,
                    plan_role_arn: "arn:plan:shared".into(),
                    apply_role_arn: "arn:apply:shared".into(),
                    max_parallel: None,
                },
                Account {
                    name: "dev".into(),
                    path: "dev".into(),
                    dependencies: vec!["shared".into()],
                    voters: vec!["c@example.com".into()],
                    github_voters: vec![],
                    min_approval_count: 1,
                    min_rejection_count: 1,
                    plan_role_arn: "arn:plan:dev".into(),
                    apply_role_arn: "arn:apply:dev".into(),
                    max_parallel: Some(1),
                },
            ],
        )
        .unwrap();
        // Two units with the same leaf name in one account must get distinct ids.
        let plan = DeploymentPlan {
            max_parallel: 2,
            account_caps: BTreeMap::new(),
            units: vec![
                unit("shared/net", &[], &[]),
                unit("dev/a/app", &[], &["shared"]),
                unit("dev/b/app", &["dev/a/app"], &["shared"]),
            ],
            makespan: 3.0,
        };
        let plan_cmd = CommandTemplate::new("terraform -chdir={cfg_path} plan").unwrap();
        let apply_cmd = CommandTemplate::new("terraform apply").unwrap();
        let providers = BTreeMap::from([(
            p("dev/a/app"),
            vec!["terraform.io/builtin/terraform".to_string()],
        )]);
        let ctx = RunContext {
            pr_id: 7,
            commit_id: "abcdef0123",
            accounts: &accounts,
            plan_command: &plan_cmd,
            apply_command: &apply_cmd,
            new_providers: &providers,
        };
        let ex = executions_from_plan(&plan, &ctx).unwrap();
        assert_eq!(ex.len(), 3);
        assert!(ex[1].execution_id.starts_with("run-7-abcd-dev-app-"));
        assert_ne!(ex[1].execution_id, ex[2].execution_id);
        assert_eq!(ex[2].wait_for, vec![ex[1].execution_id.clone()]);
        assert_eq!(ex[2].wait_accounts, vec!["shared".to_string()]);
        assert_eq!(ex[0].voters.len(), 2);
        assert_eq!(ex[0].min_approval_count, 2);
        assert_eq!(ex[1].apply_role_arn, "arn:apply:dev");
        assert_eq!(ex[1].account_deps, vec!["shared".to_string()]);
        assert_eq!(
            (ex[0].account_max_parallel, ex[1].account_max_parallel),
            (None, Some(1))
        );
        assert_eq!(ex[0].plan_command, "terraform -chdir=shared/net plan");
        assert_eq!(
            ex[1].new_providers,
            vec!["terraform.io/builtin/terraform".to_string()]
        );
        assert!(ex[0].new_providers.is_empty());
        // Deterministic: the same plan gives the same ids.
        assert_eq!(executions_from_plan(&plan, &ctx).unwrap(), ex);
        live_ci_core::deploy::validate_executions(&ex).unwrap();
        // A unit outside every account path is an error naming it.
        let outside = DeploymentPlan {
            units: vec![unit("prod/db", &[], &[])],
            ..plan.clone()
        };
        let err = executions_from_plan(&outside, &ctx).unwrap_err();
        assert!(
            err.to_string().starts_with("prod/db: matches no account"),
            "{err}"
        );
    }

    #[test]
    fn a_destroy_waits_for_removed_dependents_and_kept_units_applied_first() {
        let accounts = Accounts::new(
            "accounts.json",
            vec![Account {
                name: "dev".into(),
                path: "dev".into(),
                dependencies: vec![],
                voters: vec!["c@example.com".into()],
                github_voters: vec![],
                min_approval_count: 1,
                min_rejection_count: 1,
                plan_role_arn: "arn:plan:dev".into(),
                apply_role_arn: "arn:apply:dev".into(),
                max_parallel: None,
            }],
        )
        .unwrap();
        let destroy = |path: &str, deps: &[&str]| PlannedUnit {
            action: Action::Destroy,
            ..unit(path, deps, &[])
        };
        // dev/b (removed) and dev/c (kept, changed) depended on dev/a at base.
        let plan = DeploymentPlan {
            max_parallel: 2,
            account_caps: BTreeMap::new(),
            units: vec![
                destroy("dev/b", &[]),
                unit("dev/c", &[], &[]),
                destroy("dev/a", &["dev/b", "dev/c"]),
            ],
            makespan: 2.0,
        };
        let plan_cmd = CommandTemplate::new("terraform -chdir={cfg_path} plan").unwrap();
        let apply_cmd = CommandTemplate::new("terraform apply").unwrap();
        let ctx = RunContext {
            pr_id: 7,
            commit_id: "abcdef0123",
            accounts: &accounts,
            plan_command: &plan_cmd,
            apply_command: &apply_cmd,
            new_providers: &BTreeMap::new(),
        };
        let ex = executions_from_plan(&plan, &ctx).unwrap();
        assert_eq!(
            ex[2].wait_for,
            [ex[0].execution_id.clone(), ex[1].execution_id.clone()]
        );
        assert_eq!(ex[2].plan_command, "terraform -chdir=dev/a plan -destroy");
        assert!(ex[0].wait_for.is_empty() && ex[1].wait_for.is_empty());
        live_ci_core::deploy::validate_executions(&ex).unwrap();
    }
}
