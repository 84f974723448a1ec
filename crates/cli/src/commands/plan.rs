//! `live-ci plan`: the deployment the pipeline would run for a change.

use live_ci_core::account::Accounts;
use live_ci_terragrunt::plan::{PlanOptions, build_plan};

use crate::args::{PlanArgs, PlanFormat};
use crate::error::CliError;
use crate::repo::affected;
use crate::{Output, render};

/// Runs `live-ci plan`: the deployment the change would run (accounts and
/// their waits from `--accounts` when given), in the requested format.
pub fn run(args: &PlanArgs) -> Result<Output, CliError> {
    let accounts = match &args.accounts {
        None => None,
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|source| CliError::Read {
                path: file.display().to_string(),
                source,
            })?;
            Some(Accounts::from_json(&file.display().to_string(), &text)?)
        }
    };
    let (detection, warnings) = affected(&args.repo.repo, &args.change, &args.filter)?;
    let options = PlanOptions {
        accounts: accounts.as_ref(),
        max_parallel: args.max_parallel as usize,
        durations: Default::default(),
    };
    let plan = build_plan(
        &detection.affected,
        &detection.head,
        detection.base.as_ref(),
        &options,
    )?;
    let text = match args.format {
        PlanFormat::Json => serde_json::to_string_pretty(&plan)?,
        PlanFormat::Dot => render::plan_dot(&plan),
        PlanFormat::Table => {
            let rows = plan
                .units
                .iter()
                .map(|u| {
                    let mut waits: Vec<String> =
                        u.dependencies.iter().map(ToString::to_string).collect();
                    waits.extend(u.waits_for_accounts.iter().map(|a| format!("account:{a}")));
                    vec![
                        u.position.to_string(),
                        u.path.to_string(),
                        render::action(u.action).to_string(),
                        u.account.clone().unwrap_or_else(|| "-".into()),
                        format!("{}", u.start),
                        if waits.is_empty() {
                            "-".into()
                        } else {
                            waits.join(", ")
                        },
                    ]
                })
                .collect();
            let mut t = render::table(
                &[
                    "#",
                    "UNIT",
                    "ACTION",
                    "ACCOUNT",
                    "STARTS AT STEP",
                    "WAITS FOR",
                ],
                rows,
            );
            t.push_str(&format!(
                "\n{} unit(s), at most {} at once, {} step(s) end to end\n",
                plan.units.len(),
                plan.max_parallel,
                plan.makespan
            ));
            // The pacing the start steps above were predicted with.
            for (account, cap) in &plan.account_caps {
                t.push_str(&format!(
                    "account {account:?}: at most {cap} of its units at once\n"
                ));
            }
            t
        }
    };
    Ok(Output {
        text,
        warnings,
        errors: Vec::new(),
    })
}
