//! The task's git calls read no configuration repository code can write: a
//! `~/.gitconfig` (or `$XDG_CONFIG_HOME/git/config`) with a canary
//! `core.fsmonitor` and `core.hooksPath` makes plain git run the canary, and
//! none of the adapter's calls.
#![allow(clippy::unwrap_used)] // test helpers panic on set-up failure by design

use std::path::Path;
use std::process::Command;

use live_ci_git::{GitCli, GitTree};
use live_ci_testkit::git;

/// Set in the re-run of this test binary whose HOME is the hostile one: the
/// process environment cannot be changed in a running test (no `unsafe`).
const INNER: &str = "LIVE_CI_TEST_HOSTILE_ORIGIN";
const NAME: &str =
    "hostile_config::a_gitconfig_the_child_wrote_runs_nothing_in_the_tasks_git_calls";

fn hostile_home(home: &Path, canary: &Path) {
    let hooks = home.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for hook in ["post-checkout", "pre-auto-gc", "reference-transaction"] {
        let path = hooks.join(hook);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho {hook} >> '{}'\n", canary.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = format!(
        "[core]\n\tfsmonitor = \"echo fsmonitor >> '{c}'; false\"\n\thooksPath = {h}\n\tsshCommand = \"echo ssh >> '{c}'; false\"\n",
        c = canary.display(),
        h = hooks.display()
    );
    std::fs::write(home.join(".gitconfig"), &config).unwrap();
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    std::fs::write(home.join(".config/git/config"), &config).unwrap();
}

#[test]
fn a_gitconfig_the_child_wrote_runs_nothing_in_the_tasks_git_calls() {
    if let Some(origin) = std::env::var_os(INNER) {
        // The task's calls, under the hostile HOME.
        let origin = Path::new(&origin);
        let head = git(origin, &["rev-parse", "HEAD"]);
        let work = tempfile::tempdir().unwrap();
        let url = origin.display().to_string();
        let full = GitCli::clone_at(&url, &work.path().join("full"), &head, None).unwrap();
        full.resolve("HEAD").unwrap();
        full.first_parent(&head).unwrap();
        let one = GitCli::fetch_commit(&url, &work.path().join("one"), &head, None).unwrap();
        one.verify_work_tree(&head).unwrap();
        let tree = GitTree::open(one.clone(), &head).unwrap();
        drop(tree);
        GitCli::open(one.dir()).unwrap();
        return;
    }
    let origin = tempfile::tempdir().unwrap();
    let o = origin.path();
    git(o, &["init", "-q", "-b", "main"]);
    std::fs::write(o.join("a.tf"), "1").unwrap();
    git(o, &["add", "-A"]);
    git(o, &["commit", "-qm", "one"]);
    std::fs::write(o.join("b.tf"), "2").unwrap();
    git(o, &["add", "-A"]);
    git(o, &["commit", "-qm", "two"]);
    let home = tempfile::tempdir().unwrap();
    let canary = home.path().join("canary");
    hostile_home(home.path(), &canary);

    // The hostile configuration works on plain git.
    let control = tempfile::tempdir().unwrap();
    let out = Command::new("git")
        .args(["clone", "-q", &o.display().to_string(), "c"])
        .current_dir(control.path())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let ran = std::fs::read_to_string(&canary).unwrap_or_default();
    assert!(
        ran.contains("post-checkout"),
        "the control clone ran {ran:?}"
    );
    std::fs::remove_file(&canary).unwrap();

    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(INNER, o)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "the task's git calls under the hostile HOME failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ran = std::fs::read_to_string(&canary).unwrap_or_default();
    assert!(
        ran.is_empty(),
        "the task's git ran the child's configuration: {ran:?}"
    );
}
