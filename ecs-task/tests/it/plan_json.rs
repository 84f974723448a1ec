//! Plans read from `terraform show -json` of real saved plans (terraform 1.11,
//! the built-in `terraform_data` and outputs, local state): every kind of
//! change a unit's plan can hold is counted as Terraform counts it, an
//! outputs-only plan is a change, and a plan with nothing in it is not.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::path::Path;

use live_ci_core::terraform::plan_json::PlanSummary;
use live_ci_task::TaskError;
use live_ci_task::plans::describe_plan;
use support::repo::SHOW_COMMAND;

const BASE: &str = r#"
variable "v" { default = "one" }
resource "terraform_data" "kept" { input = var.v }
resource "terraform_data" "replaced" { triggers_replace = [var.v] }
resource "terraform_data" "gone" {}
output "kept" { value = terraform_data.kept.output }
"#;

/// The child environment terra-run gives its commands (allow-listed, no role).
fn env() -> Vec<(String, String)> {
    live_ci_task::sandbox::env_for(None, &[])
}

fn terraform(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("terraform")
        .args(args)
        .current_dir(dir)
        .env("TF_IN_AUTOMATION", "1")
        .output()
        .unwrap_or_else(|e| panic!("terraform {args:?}: {e}"));
    assert!(
        out.status.success(),
        "terraform {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Applies `BASE`, replaces the configuration by `head`, plans to a saved
/// plan and reads it the way terra-run and the plan scan do.
async fn plan_of(head: &str, var: &str) -> PlanSummary {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.tf"), BASE).unwrap();
    terraform(dir.path(), &["init", "-input=false", "-no-color"]);
    terraform(
        dir.path(),
        &["apply", "-input=false", "-no-color", "-auto-approve"],
    );
    std::fs::write(dir.path().join("main.tf"), head).unwrap();
    let text = terraform(
        dir.path(),
        &[
            "plan",
            "-input=false",
            "-no-color",
            &format!("-var=v={var}"),
            "-out=unit.tfplan",
        ],
    );
    let summary = describe_plan(SHOW_COMMAND, "unit.tfplan", dir.path(), &env(), "")
        .await
        .unwrap();
    // The JSON agrees with Terraform's own summary line where it has one.
    if let Some(counts) = live_ci_core::terraform::parse_plan_summary(&text)
        && summary.outputs_changed.is_empty()
    {
        assert_eq!(counts, summary.counts(), "{text}");
    }
    summary
}

#[tokio::test]
async fn add_change_destroy_and_replace_are_counted_like_terraform() {
    let head = format!(
        "{}\nresource \"terraform_data\" \"added\" {{}}\n",
        BASE.replace("resource \"terraform_data\" \"gone\" {}\n", "")
    );
    let s = plan_of(&head, "two").await;
    // added + the new half of replaced; gone + the old half of replaced; kept's input.
    assert_eq!((s.add, s.change, s.destroy, s.replace), (2, 1, 2, 1));
    assert_eq!(s.import, 0);
    // `kept`'s value is unknown until apply: the output changes too.
    assert_eq!(s.outputs_changed, vec!["kept"]);
    assert!(s.has_changes() && s.has_resource_changes());
    assert_eq!(
        s.describe(),
        "2 to add, 1 to change, 2 to destroy (1 replaced); outputs change: kept"
    );
}

#[tokio::test]
async fn each_single_change_alone() {
    let added = plan_of(
        &format!("{BASE}\nresource \"terraform_data\" \"added\" {{}}\n"),
        "one",
    )
    .await;
    assert_eq!((added.add, added.change, added.destroy), (1, 0, 0));
    assert!(added.outputs_changed.is_empty());

    let destroyed = plan_of(
        &BASE.replace("resource \"terraform_data\" \"gone\" {}\n", ""),
        "one",
    )
    .await;
    assert_eq!(
        (destroyed.add, destroyed.change, destroyed.destroy),
        (0, 0, 1)
    );
    assert_eq!(destroyed.describe(), "0 to add, 0 to change, 1 to destroy");

    let changed = plan_of(
        &BASE.replace(
            "resource \"terraform_data\" \"replaced\" { triggers_replace = [var.v] }",
            "resource \"terraform_data\" \"replaced\" { triggers_replace = [\"one\"] }",
        ),
        "two",
    )
    .await;
    assert_eq!((changed.add, changed.change, changed.destroy), (0, 1, 0));

    let replaced = plan_of(
        &BASE.replace(
            "resource \"terraform_data\" \"kept\" { input = var.v }",
            "resource \"terraform_data\" \"kept\" { input = \"one\" }",
        ),
        "two",
    )
    .await;
    assert_eq!(
        (replaced.add, replaced.destroy, replaced.replace),
        (1, 1, 1)
    );
}

#[tokio::test]
async fn an_outputs_only_plan_is_a_change_and_says_so() {
    let s = plan_of(
        &format!("{BASE}\noutput \"region\" {{ value = \"eu\" }}\n"),
        "one",
    )
    .await;
    assert!(!s.has_resource_changes());
    assert!(s.has_changes(), "outputs must still be applied");
    assert_eq!(s.outputs_changed, vec!["region"]);
    assert_eq!(s.describe(), "outputs change: region");
}

#[tokio::test]
async fn a_plan_with_nothing_in_it_has_no_changes() {
    let s = plan_of(BASE, "one").await;
    assert_eq!(s, PlanSummary::default());
    assert!(!s.has_changes());
    assert_eq!(s.describe(), "no changes");
}

#[tokio::test]
async fn a_missing_plan_file_fails_naming_the_command() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.tf"), BASE).unwrap();
    terraform(dir.path(), &["init", "-input=false", "-no-color"]);
    let err = describe_plan(SHOW_COMMAND, "nope.tfplan", dir.path(), &env(), "")
        .await
        .unwrap_err();
    assert!(matches!(err, TaskError::CommandFailed { .. }), "{err}");
    assert!(err.to_string().contains("show -json"), "{err}");
    // A show command that prints a state instead of the plan is refused,
    // never read as "no changes".
    let err = describe_plan("terraform show -json #", "x", dir.path(), &env(), "")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a plan"), "{err}");
}

/// The rollback record read from `terraform state pull` (terra-run's fast
/// path) lists exactly what `terraform show -json` lists, for a state with
/// counted and keyed instances (a key with a quote and a backslash) and a
/// keyed child module.
#[test]
fn the_pulled_states_resources_are_those_show_json_lists() {
    use live_ci_core::terraform::{resources_of_providers, resources_of_providers_in_state};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("child")).unwrap();
    std::fs::write(
        d.join("child/main.tf"),
        "resource \"terraform_data\" \"inner\" {}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("main.tf"),
        r#"
resource "terraform_data" "single" {}
resource "terraform_data" "counted" { count = 2 }
resource "terraform_data" "keyed" {
  for_each = toset(["plain", "q\"b\\s", "with space"])
}
module "child" {
  source   = "./child"
  for_each = toset(["one", "two"])
}
"#,
    )
    .unwrap();
    terraform(d, &["init", "-input=false", "-no-color"]);
    terraform(d, &["apply", "-input=false", "-no-color", "-auto-approve"]);
    let providers = vec!["terraform.io/builtin/terraform".to_string()];
    let shown =
        resources_of_providers(&terraform(d, &["show", "-json", "-no-color"]), &providers).unwrap();
    assert_eq!(shown.len(), 8, "{shown:?}");
    let pulled =
        resources_of_providers_in_state(&terraform(d, &["state", "pull"]), &providers).unwrap();
    assert_eq!(pulled, Some(shown));
}
