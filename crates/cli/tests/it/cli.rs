//! The `live-ci` binary over the sample live repo, built as a real git history.
#![allow(clippy::unwrap_used)] // test helpers panic on set-up failure by design

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh copy of examples/live-repo: base commit, feature branch, merge commit.
fn live_repo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg(root().join("examples/live-repo/build.sh"))
        .arg(tmp.path().join("repo"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmp
}

fn live_ci(repo: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_live-ci"))
        .args(args)
        .arg("--repo")
        .arg(repo)
        .output()
        .unwrap()
}

fn json_ok(repo: &Path, args: &[&str]) -> Value {
    let out = live_ci(repo, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The paths `find` listed.
fn found(v: &Value) -> Vec<&str> {
    v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn graph_lists_units_dependencies_and_reads() {
    let tmp = live_repo();
    let repo = tmp.path().join("repo");
    let v = json_ok(&repo, &["graph"]);
    let units: Vec<&str> = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        units,
        [
            "dev/us-east-1/app",
            "dev/us-east-1/cdn",
            "dev/us-east-1/db",
            "dev/us-east-1/worker",
            "shared/us-east-1/logs",
            "shared/us-east-1/network/dns",
            "shared/us-east-1/network/vpc",
        ]
    );
    assert_eq!(v["errors"], json!([]));
    let app = &v["units"][0];
    assert_eq!(
        app["dependencies"],
        json!(["dev/us-east-1/db", "shared/us-east-1/network/dns"])
    );
    assert_eq!(
        app["reads"],
        json!(["dev/account.hcl", "dev/us-east-1/region.hcl", "root.hcl"])
    );
    assert_eq!(v["units"][1]["dependencies"], json!(["dev/us-east-1/app"]));
    assert_eq!(v["units"][4]["modules"], json!(["modules/bucket"]));
}

#[test]
fn graph_renders_dot_and_mermaid() {
    let tmp = live_repo();
    let repo = tmp.path().join("repo");
    let dot = live_ci(&repo, &["graph", "--format", "dot"]);
    let dot = String::from_utf8(dot.stdout).unwrap();
    assert!(dot.starts_with("digraph units {"));
    assert!(dot.contains("\"dev/us-east-1/db\" -> \"shared/us-east-1/network/vpc\";"));
    let mm = live_ci(&repo, &["graph", "--format", "mermaid"]);
    let mm = String::from_utf8(mm.stdout).unwrap();
    assert!(mm.starts_with("flowchart LR\n"));
    assert!(
        mm.contains("u2[\"dev/us-east-1/db\"]") && mm.contains("u2 --> u6"),
        "{mm}"
    );
}

#[test]
fn affected_by_the_merge_with_reasons_and_skipped_removal() {
    let tmp = live_repo();
    let repo = tmp.path().join("repo");
    let out = live_ci(&repo, &["affected", "--base", "HEAD^1", "--head", "HEAD"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["units"],
        json!([
            {"path": "dev/us-east-1/app", "action": "apply", "reasons": ["dependency-affected"]},
            {"path": "dev/us-east-1/cdn", "action": "apply", "reasons": ["dependency-affected"]},
            {"path": "dev/us-east-1/db", "action": "apply", "reasons": ["dependency-affected"]},
            {"path": "dev/us-east-1/worker", "action": "apply", "reasons": ["changed", "dependency-affected"]},
            {"path": "shared/us-east-1/network/dns", "action": "apply", "reasons": ["dependency-affected"]},
            {"path": "shared/us-east-1/network/vpc", "action": "apply", "reasons": ["changed"]},
        ])
    );
    assert_eq!(v["skipped"][0]["path"], "dev/us-east-1/legacy-queue");
    assert_eq!(v["skipped"][0]["action"], "destroy");
    assert!(stderr(&out).contains("warning: unit \"dev/us-east-1/legacy-queue\" was removed"));

    let v = json_ok(
        &repo,
        &[
            "affected",
            "--base",
            "HEAD^1",
            "--head",
            "HEAD",
            "--allow-destroy",
        ],
    );
    assert_eq!(
        v["units"][3],
        json!({"path": "dev/us-east-1/legacy-queue", "action": "destroy", "reasons": ["removed"]})
    );
    assert_eq!(v["skipped"], json!([]));
}

#[test]
fn affected_narrowed_by_filters() {
    let tmp = live_repo();
    let repo = tmp.path().join("repo");
    let v = json_ok(
        &repo,
        &[
            "affected",
            "--base",
            "HEAD^1",
            "--head",
            "HEAD",
            "--allow-destroy",
            "--filter",
            "./shared/**",
            "--filter",
            "legacy-queue",
        ],
    );
    let paths: Vec<&str> = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "dev/us-east-1/legacy-queue",
            "shared/us-east-1/network/dns",
            "shared/us-east-1/network/vpc"
        ]
    );
}

#[test]
fn plan_orders_by_dependencies_accounts_and_critical_path() {
    let tmp = live_repo();
    let repo = tmp.path().join("repo");
    let accounts = root().join("examples/live-repo/accounts.json");
    let v = json_ok(
        &repo,
        &[
            "plan",
            "--base",
            "HEAD^1",
            "--head",
            "HEAD",
            "--allow-destroy",
            "--accounts",
            accounts.to_str().unwrap(),
            "--max-parallel",
            "2",
            "--format",
            "json",
        ],
    );
    let order: Vec<(&str, &str, &str)> = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["path"].as_str().unwrap(),
                u["action"].as_str().unwrap(),
                u["account"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("shared/us-east-1/network/vpc", "apply", "shared"),
            ("dev/us-east-1/legacy-queue", "destroy", "dev"),
            ("shared/us-east-1/network/dns", "apply", "shared"),
            ("dev/us-east-1/db", "apply", "dev"),
            ("dev/us-east-1/app", "apply", "dev"),
            ("dev/us-east-1/worker", "apply", "dev"),
            ("dev/us-east-1/cdn", "apply", "dev"),
        ]
    );
    // db depends on the shared vpc across accounts and waits for the whole shared account.
    let db = &v["units"][3];
    assert_eq!(db["dependencies"], json!(["shared/us-east-1/network/vpc"]));
    assert_eq!(db["waits_for_accounts"], json!(["shared"]));
    assert_eq!(db["position"], 4);
    assert_eq!(v["makespan"], 5.0);
    let table = live_ci(
        &repo,
        &[
            "plan",
            "--base",
            "HEAD^1",
            "--head",
            "HEAD",
            "--accounts",
            accounts.to_str().unwrap(),
        ],
    );
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.lines().next().unwrap().starts_with("#  UNIT"),
        "{text}"
    );
    assert!(text.contains("6 unit(s), at most 10 at once"), "{text}");
}

#[test]
fn find_with_graph_operators_and_git_ranges() {
    let tmp = live_repo();
    let repo = tmp.path().join("repo");
    let v = json_ok(&repo, &["find", "--filter", "...^vpc"]);
    assert_eq!(
        found(&v),
        [
            "dev/us-east-1/app",
            "dev/us-east-1/cdn",
            "dev/us-east-1/db",
            "dev/us-east-1/worker",
            "shared/us-east-1/network/dns"
        ]
    );
    let v = json_ok(
        &repo,
        &[
            "find",
            "--filter",
            "[HEAD^1...HEAD]",
            "--filter",
            "!./dev/**",
        ],
    );
    // A range selects the changed units only (the vpc, not its dependent dns).
    assert_eq!(found(&v), ["shared/us-east-1/network/vpc"]);
    // ...and the units it removed, marked so.
    let v = json_ok(&repo, &["find", "--filter", "[HEAD^1...HEAD] | ./dev/**"]);
    assert_eq!(
        v["units"],
        json!([
            {"path": "dev/us-east-1/legacy-queue", "type": "unit", "removed": true},
            {"path": "dev/us-east-1/worker", "type": "unit"}
        ])
    );
    // the default filters file applies unless disabled
    std::fs::write(repo.join(".live-ci-filters"), "# comment\nlogs\n").unwrap();
    assert_eq!(found(&json_ok(&repo, &["find"])), ["shared/us-east-1/logs"]);
    let all = json_ok(&repo, &["find", "--no-filters-file"]);
    assert_eq!(all["units"].as_array().unwrap().len(), 7);
}

#[test]
fn errors_name_file_line_column_and_exit_1() {
    let tmp = live_repo();
    let repo = tmp.path().join("repo");
    std::fs::write(
        repo.join("dev/us-east-1/db/terragrunt.hcl"),
        "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\ninputs = {\n  x = [1,\n}\n",
    )
    .unwrap();
    // The broken unit stays listed, its error with it and on stderr...
    let out = live_ci(&repo, &["graph"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("dev/us-east-1/db/terragrunt.hcl:6:1"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["units"][2]["errors"][0]
            .as_str()
            .unwrap()
            .contains("dev/us-east-1/db/terragrunt.hcl:6:1"),
        "{v}"
    );
    // ...and --strict refuses it.
    for cmd in ["graph", "find"] {
        let out = live_ci(&repo, &[cmd, "--strict"]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        assert!(
            stderr(&out).contains("dev/us-east-1/db/terragrunt.hcl:6:1"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn bad_queries_revisions_and_accounts_are_named() {
    let tmp = live_repo();
    let repo = tmp.path().join("repo");
    let out = live_ci(&repo, &["find", "--filter", "vpc|"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("column 5"), "{}", stderr(&out));

    let out = live_ci(&repo, &["affected", "--base", "nope", "--head", "HEAD"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown revision \"nope\""),
        "{}",
        stderr(&out)
    );

    let accounts = tmp.path().join("accounts.json");
    std::fs::write(
        &accounts,
        r#"[{"name": "shared", "path": "shared", "voters": ["a@example.com"],
            "min_approval_count": 1, "min_rejection_count": 1,
            "plan_role_arn": "p", "apply_role_arn": "a"}]"#,
    )
    .unwrap();
    let out = live_ci(
        &repo,
        &[
            "plan",
            "--base",
            "HEAD^1",
            "--head",
            "HEAD",
            "--accounts",
            accounts.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("dev/us-east-1/app: matches no account path"),
        "{}",
        stderr(&out)
    );
    let out = live_ci(&repo, &["find", "--filters-file", "missing.txt"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("missing.txt"));
}

#[test]
fn bad_usage_exits_2() {
    let tmp = live_repo();
    let repo = tmp.path().join("repo");
    assert_eq!(
        live_ci(&repo, &["affected", "--base", "HEAD"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        live_ci(
            &repo,
            &["plan", "--base", "a", "--head", "b", "--max-parallel", "0"]
        )
        .status
        .code(),
        Some(2)
    );
    assert_eq!(
        live_ci(&repo, &["graph", "--format", "yaml"]).status.code(),
        Some(2)
    );
}

/// A fresh database on the test PostgreSQL (`LIVE_CI_PG_URL`, or scripts/pg.sh).
fn fresh_database_url() -> String {
    let server = match std::env::var("LIVE_CI_PG_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            let out = Command::new("bash")
                .arg(root().join("scripts/pg.sh"))
                .arg("up")
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        }
    };
    let name = format!("cli_migrate_{}", std::process::id());
    let out = Command::new("/usr/lib/postgresql/15/bin/createdb")
        .arg(format!("--maintenance-db={server}"))
        .arg(&name)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    live_ci_metadb::with_database(&server, &name)
}

#[test]
fn migrate_applies_once_then_reports_up_to_date() {
    let url = fresh_database_url();
    let run = |url: &str| {
        Command::new(env!("CARGO_BIN_EXE_live-ci"))
            .arg("migrate")
            .env("LIVE_CI_DATABASE_URL", url)
            .output()
            .unwrap()
    };
    let out = run(&url);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let all: Vec<u32> = live_ci_metadb::MIGRATIONS
        .iter()
        .map(|m| m.version)
        .collect();
    let latest = all.last().copied().unwrap();
    assert_eq!(v, json!({"applied": all, "latest": latest}));
    let out = run(&url);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v, json!({"applied": [], "latest": latest}));
    // A bad URL is an input error (1); a missing one is bad usage (2).
    let out = run("postgres://nobody@127.0.0.1:1/none");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error: metadb: postgres: "),
        "{}",
        stderr(&out)
    );
    let out = run("not a url");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("invalid database url \"not a url\""),
        "{}",
        stderr(&out)
    );
    let out = Command::new(env!("CARGO_BIN_EXE_live-ci"))
        .arg("migrate")
        .env_remove("LIVE_CI_DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // The URL's TLS parameters stay: the server takes verified TLS only.
    let name = url.split('?').next().unwrap().rsplit('/').next().unwrap();
    let _ = Command::new("/usr/lib/postgresql/15/bin/dropdb")
        .arg(format!(
            "--maintenance-db={}",
            live_ci_metadb::with_database(&url, "postgres")
        ))
        .arg(name)
        .output();
}
