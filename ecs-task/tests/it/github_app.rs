//! The task with GitHub App credentials: the real `live-ci-task` binary's
//! pr-plan reads the App's key from SSM (LocalStack), asks the GitHub fake for
//! an installation token limited to the live repository and to pr-plan's
//! permissions with a JWT that openssl verifies against the App's public key,
//! posts its statuses and comment with that token, and its plan child sees
//! neither the token, nor the key, nor where the key is kept.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use live_ci_testkit::github::{FakeApp, FakeGitHub};
use live_ci_testkit::unique;

use crate::child_env::{assert_only_what_terraform_needs, dump, task};
use crate::support::pg::TestDb;
use crate::support::repo::{GitRepo, TfTemplates};

fn openssl(args: &[&str], dir: &std::path::Path) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "openssl {args:?}: {out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pr_plan_with_a_github_app_uses_its_own_installation_token_and_the_child_sees_none_of_it() {
    let keys = tempfile::tempdir().unwrap();
    openssl(
        &[
            "genrsa",
            "-traditional",
            "-out",
            "test-only-app-key.pem",
            "2048",
        ],
        keys.path(),
    );
    openssl(
        &[
            "rsa",
            "-pubout",
            "-in",
            "test-only-app-key.pem",
            "-out",
            "public.pem",
        ],
        keys.path(),
    );
    let pem = std::fs::read_to_string(keys.path().join("test-only-app-key.pem")).unwrap();
    let param = format!("/{}/github-app-private-key", unique("app"));
    let ssm = live_ci_aws::sdk::ssm::Client::from_conf(live_ci_aws::sdk::ssm::Config::from(
        &live_ci_testkit::aws::sdk_config(),
    ));
    ssm.put_parameter()
        .name(&param)
        .value(&pem)
        .r#type(live_ci_aws::sdk::ssm::types::ParameterType::SecureString)
        .send()
        .await
        .unwrap();

    let repo = GitRepo::new();
    repo.unit("dev/app", "1", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.unit("dev/app", "2", &[]);
    let head = repo.commit("change");
    let out = tempfile::tempdir().unwrap();
    let dump_file = out.path().join("env");
    let tf = TfTemplates::new(&format!("env -0 > {}; ", dump_file.display()));
    let github = FakeGitHub::start("acme/live").await;
    github.trust_app(FakeApp {
        app_id: 12,
        installation_id: 34,
        public_key_pem: std::fs::read_to_string(keys.path().join("public.pem")).unwrap(),
    });
    let accounts = r#"[{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
      "min_approval_count": 1, "min_rejection_count": 1,
      "plan_role_arn": "arn:aws:iam::111111111111:role/plan",
      "apply_role_arn": "arn:aws:iam::111111111111:role/apply"}]"#;
    let db = TestDb::new().await;
    let output = task(
        "pr-plan",
        &[
            ("METADB_URL", db.url.clone()),
            ("GITHUB_APP_ID", "12".into()),
            ("GITHUB_APP_INSTALLATION_ID", "34".into()),
            ("GITHUB_APP_PRIVATE_KEY_SSM_KEY", param.clone()),
            ("GITHUB_API_URL", github.url()),
            ("REPO_FULL_NAME", "acme/live".into()),
            ("REPO_CLONE_URL", repo.url()),
            ("ACCOUNT_PARENT_CFG", accounts.to_string()),
            ("PLAN_COMMAND", tf.plan.clone()),
            ("LIVE_CI_PR_NUMBER", "5".into()),
            ("LIVE_CI_COMMIT", head.clone()),
            ("LIVE_CI_BASE_REF", "main".into()),
        ],
    )
    .output()
    .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    // One exchange, for exactly the live repository and pr-plan's permissions.
    let tokens = github.app_tokens();
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    assert_eq!(tokens[0].installation_id, "34");
    assert_eq!(
        tokens[0].request,
        serde_json::json!({
            "repositories": ["live"],
            "permissions": {"checks": "write", "contents": "read", "pull_requests": "write", "statuses": "write"},
        })
    );
    // The JWT is signed by the App's key: openssl checks it with the public one.
    let (signed, signature) = tokens[0].jwt.rsplit_once('.').unwrap();
    std::fs::write(keys.path().join("signed"), signed).unwrap();
    std::fs::write(
        keys.path().join("signature"),
        base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, signature)
            .unwrap(),
    )
    .unwrap();
    openssl(
        &[
            "dgst",
            "-sha256",
            "-verify",
            "public.pem",
            "-signature",
            "signature",
            "signed",
        ],
        keys.path(),
    );
    // Everything written to the repository carries the installation token.
    let installation = &tokens[0].token;
    let bearers: Vec<String> = github
        .requests()
        .await
        .iter()
        .filter(|r| r.url.path().starts_with("/repos/"))
        .map(|r| r.headers["authorization"].to_str().unwrap().to_owned())
        .collect();
    assert!(!bearers.is_empty());
    assert!(
        bearers
            .iter()
            .all(|b| *b == format!("Bearer {installation}")),
        "{bearers:?}"
    );
    // With an App the statuses are check runs (`live_ci_github::connect`):
    // the unit's carries its plan as terraform shows it, in a diff block.
    assert_eq!(github.statuses(), []);
    let runs = github.check_runs();
    let unit = runs
        .iter()
        .find(|r| r.current["name"] == "live-ci: plan dev/app")
        .unwrap_or_else(|| panic!("{runs:#?}"));
    assert_eq!(unit.current["head_sha"], head.as_str());
    assert_eq!(unit.current["conclusion"], "success");
    assert_eq!(
        unit.current["output"]["summary"],
        "1 to add, 0 to change, 0 to destroy"
    );
    let text = unit.current["output"]["text"].as_str().unwrap();
    assert!(text.starts_with("```diff\n"), "{text}");
    assert!(
        text.contains("+  + resource \"terraform_data\" \"this\" {\n"),
        "{text}"
    );
    assert!(runs.iter().any(|r| r.current["name"] == "live-ci: plan"));
    assert_eq!(github.comments(5).len(), 1);

    // The plan child got none of it.
    let env = dump(&dump_file);
    let key_line = pem.lines().nth(1).unwrap();
    assert_only_what_terraform_needs(
        &env,
        &[installation, key_line, &param, &tokens[0].jwt, &db.url],
    );
    for name in [
        "GITHUB_APP_ID",
        "GITHUB_APP_INSTALLATION_ID",
        "GITHUB_APP_PRIVATE_KEY_SSM_KEY",
    ] {
        assert!(!env.contains_key(name), "{name} reached the child");
    }
    db.drop_db().await;
}
