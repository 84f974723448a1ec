//! Private module sources over HTTPS, end to end through the real binary:
//! pr-plan with a GitHub App and `MODULE_SOURCE_REPOSITORIES` asks the GitHub
//! fake for a second, `contents: read` token for exactly the module's
//! repository, and terraform — running as the child user — clones the
//! module from the fake's git server (git's own `http-backend`, which
//! demands an installation token that may read that repository) through the
//! credential file in the child's home, which the child owns alone (`0600`).
//! The token is in nothing the task or the child logs, nor in the child's
//! environment. A plan started by a maintainer's `/live-ci plan` (not a
//! trusted head) gets no token, and the clone fails with git's error.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use live_ci_testkit::github::{FakeApp, FakeGitHub};
use live_ci_testkit::unique;

use crate::child_env::task;
use crate::support::repo::{GitRepo, TfTemplates};

/// The child's uid and gid here (numeric: no passwd entry needed).
const CHILD: u32 = 61012;

fn sh(cmd: &str, dir: &Path) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{cmd}: {out:?}");
}

struct Setup {
    _keys: tempfile::TempDir,
    _modules: tempfile::TempDir,
    out: tempfile::TempDir,
    github: FakeGitHub,
    repo: GitRepo,
    head: String,
    tf: TfTemplates,
    param: String,
}

async fn setup() -> Setup {
    let keys = tempfile::tempdir().unwrap();
    sh(
        "openssl genrsa -traditional -out test-only-app-key.pem 2048 2>/dev/null && \
         openssl rsa -pubout -in test-only-app-key.pem -out public.pem 2>/dev/null",
        keys.path(),
    );
    let pem = std::fs::read_to_string(keys.path().join("test-only-app-key.pem")).unwrap();
    let param = format!("/{}/github-app-private-key", unique("modsrc"));
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
    let github = FakeGitHub::start("acme/live").await;
    github.trust_app(FakeApp {
        app_id: 12,
        installation_id: 34,
        public_key_pem: std::fs::read_to_string(keys.path().join("public.pem")).unwrap(),
    });
    // The private module: a bare repository the fake serves as acme/modules.
    let modules = tempfile::tempdir().unwrap();
    let work = modules.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(
        work.join("main.tf"),
        "resource \"terraform_data\" \"from_private_module\" {\n  input = \"private\"\n}\n",
    )
    .unwrap();
    sh(
        "git init -q -b main && git add -A && \
         git -c user.name=t -c user.email=t@example.com commit -q -m module && \
         git clone -q --bare . ../modules.git",
        &work,
    );
    github.add_git_repository("acme/modules", modules.path().join("modules.git"));

    let repo = GitRepo::new();
    repo.unit("dev/app", "1", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write(
        "dev/app/main.tf",
        &format!(
            "terraform {{\n  backend \"local\" {{}}\n}}\n\nmodule \"private\" {{\n  source = \"git::{}/acme/modules.git\"\n}}\n",
            github.url()
        ),
    );
    let head = repo.commit("use the private module");
    // What the child writes: the probe's files and terraform's state.
    let out = tempfile::tempdir().unwrap();
    let probe = format!(
        "stat -c '%u %a' \"$HOME/.git-credentials\" > {o}/credentials 2>&1; env -0 > {o}/env; ",
        o = out.path().display()
    );
    let tf = TfTemplates::new(&probe);
    for dir in [out.path(), tf.state.path()] {
        sh(
            &format!("chown {CHILD}:{CHILD} '{}'", dir.display()),
            Path::new("/"),
        );
    }
    Setup {
        _keys: keys,
        _modules: modules,
        out,
        github,
        repo,
        head,
        tf,
        param,
    }
}

/// pr-plan of the feature head, trusted or not; its output.
fn pr_plan(s: &Setup, trusted: bool) -> std::process::Output {
    let mut env = vec![
        ("GITHUB_APP_ID", "12".to_string()),
        ("GITHUB_APP_INSTALLATION_ID", "34".into()),
        ("GITHUB_APP_PRIVATE_KEY_SSM_KEY", s.param.clone()),
        ("GITHUB_API_URL", s.github.url()),
        ("REPO_FULL_NAME", "acme/live".into()),
        ("REPO_CLONE_URL", s.repo.url()),
        ("PLAN_COMMAND", s.tf.plan.clone()),
        ("LIVE_CI_PR_NUMBER", "5".into()),
        ("LIVE_CI_COMMIT", s.head.clone()),
        ("LIVE_CI_BASE_REF", "main".into()),
        ("MODULE_SOURCE_REPOSITORIES", "acme/modules".into()),
        // The fake serves git where it serves the API.
        ("MODULE_SOURCES_GIT_URL", s.github.url()),
        ("LIVE_CI_CHILD_UID", CHILD.to_string()),
        ("LIVE_CI_CHILD_GID", CHILD.to_string()),
    ];
    if trusted {
        env.push(("LIVE_CI_HEAD_TRUSTED", "true".into()));
    }
    task("pr-plan", &env).output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_heads_plan_clones_a_private_module_with_its_own_read_only_token() {
    let s = setup().await;
    let output = pr_plan(&s, true);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("terraform_data.from_private_module"),
        "the plan has the private module's resource: {stdout}"
    );

    // Two exchanges: pr-plan's own token, then exactly contents: read on the module.
    let tokens = s.github.app_tokens();
    let requests: Vec<_> = tokens.iter().map(|t| t.request.clone()).collect();
    assert_eq!(
        requests,
        [
            serde_json::json!({"repositories": ["live"],
                "permissions": {"checks": "write", "contents": "read", "pull_requests": "write", "statuses": "write"}}),
            serde_json::json!({"repositories": ["modules"], "permissions": {"contents": "read"}}),
        ]
    );
    let module_token = &tokens[1].token;
    // git sent exactly that token, after the 401 that asks for one.
    let git = s.github.git_requests();
    assert!(!git.is_empty());
    assert!(git.iter().all(|r| r.repository == "acme/modules"));
    let authorized: Vec<_> = git.iter().filter(|r| r.authorized).collect();
    assert!(!authorized.is_empty(), "{git:?}");
    for r in authorized {
        assert_eq!(
            r.credentials,
            Some(("x-access-token".to_string(), module_token.clone()))
        );
    }

    // The credential file was the child's own, readable by it alone.
    let stat = std::fs::read_to_string(s.out.path().join("credentials")).unwrap();
    assert_eq!(stat.trim(), format!("{CHILD} 600"));
    // The token is in nothing logged, posted, or in the child's environment.
    let env = std::fs::read(s.out.path().join("env")).unwrap();
    for (what, text) in [
        ("the task's stdout", stdout.to_string()),
        ("the task's stderr", stderr.to_string()),
        (
            "the child's environment",
            String::from_utf8_lossy(&env).into_owned(),
        ),
        ("the comment", format!("{:?}", s.github.comments(5))),
        ("the statuses", format!("{:?}", s.github.statuses())),
    ] {
        for t in &tokens {
            assert!(!text.contains(&t.token), "{what} carries {}", t.token);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_not_of_a_trusted_head_gets_no_module_token_and_the_clone_fails_clearly() {
    let s = setup().await;
    let output = pr_plan(&s, false);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "live-ci: private module sources (acme/modules) get no token in this plan: it is not a trusted head's (module_sources_for_forks is off)"
        ),
        "{stdout}"
    );
    // git's own error (terraform wraps its lines).
    assert!(
        stdout.contains("fatal: could not read Username for")
            && stdout.contains("terminal prompts"),
        "{stdout}"
    );
    // Only pr-plan's own token was asked for; git was turned away.
    let tokens = s.github.app_tokens();
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    let git = s.github.git_requests();
    assert!(
        !git.is_empty() && git.iter().all(|r| !r.authorized),
        "{git:?}"
    );
    let stat = std::fs::read_to_string(s.out.path().join("credentials")).unwrap_or_default();
    assert!(stat.contains("No such file"), "no credential file: {stat}");
}
