//! Children cannot read the parent: the real `live-ci-task` binary, started
//! as an unprivileged user the way Fargate and the local cloud's ECS agent
//! start it (a non-root uid holding `CAP_SETUID`, `CAP_SETGID`, `CAP_KILL`),
//! with a canary secret in its environment (the container credentials' URI,
//! the SSH deploy key) and in files of its home (a secret file, its git
//! configuration), runs a unit whose plan command probes what the task's
//! child can reach: `/proc/1/environ`, the task's `/proc/<pid>/environ`,
//! `mem` and `cmdline`, every `/proc/*/environ` it can open, the task's home
//! (read and write), the SSH agent's `/proc/<pid>/environ` and `mem`, the
//! task's scratch directory; it
//! also tries to become the task's uid again and to signal the task. The
//! canary is in nothing the child could read, and none of those attempts
//! succeeds. PostgreSQL, LocalStack (S3, STS, Step Functions), real terraform.
//!
//! The tests run as root; each starts the binary as another uid itself and
//! fails (never skips) when it cannot.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_testkit::aws::sdk_config;
use live_ci_testkit::unique;

use crate::child_env::task;
use crate::support::pg::{TestDb, exec, run};
use crate::support::repo::{GitRepo, TfTemplates};

/// The task's uid and the child's (numeric ids need no passwd entry; these
/// are the tests' own, apart from the image's 10001/10002).
const TASK_UID: u32 = 61001;
const CHILD_UID: u32 = 61002;

fn sh(cmd: &str) {
    let status = Command::new("sh").arg("-c").arg(cmd).status().unwrap();
    assert!(status.success(), "setting up: {cmd:?} failed: {status}");
}

fn mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The tests start the binary as other users: only root can.
fn require_root() {
    let out = Command::new("id").arg("-u").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "0",
        "these tests start live-ci-task as uid {TASK_UID}: run them as root"
    );
    let setpriv = Command::new("setpriv").arg("--version").output();
    assert!(
        setpriv.is_ok_and(|o| o.status.success()),
        "these tests need setpriv (util-linux) to start live-ci-task as uid {TASK_UID}"
    );
}

/// What the plan command runs first, as the child: each attempt's output goes
/// to `<out>/<name>.out` / `.err`, one line per attempt to `<out>/report`.
fn probe_script(out: &Path, task_home: &Path) -> String {
    format!(
        r#"#!/bin/sh
# $1: the task's pid (the plan command's parent).
P="$1"
OUT='{out}'
HOME_OF_TASK='{home}'
SOCK=$(printf '%s' "$GIT_SSH_COMMAND" | sed -n "s/.*IdentityAgent=\([^ ]*\) .*/\1/p" | tr -d "'")
A=""
for d in /proc/[0-9]*; do
  [ "$(cat "$d/comm" 2>/dev/null)" = ssh-agent ] && A="${{d#/proc/}}"
done
try() {{
  name="$1"; shift
  if "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"; then echo "$name: allowed"; else echo "$name: denied"; fi
}}
{{
  echo "uid: $(id -u)"
  echo "gid: $(id -g)"
  echo "groups: $(id -G)"
  grep -E '^(CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs):' /proc/self/status
  echo "task_proc_owner: $(stat -c %u /proc/$P/environ)"
  echo "agent_socket: $SOCK"
  echo "agent_uid: $(stat -c %u /proc/$A 2>/dev/null)"
  try environ_1 cat /proc/1/environ
  try environ_task cat /proc/$P/environ
  try mem_task head -c 1 /proc/$P/mem
  try cmdline_task cat /proc/$P/cmdline
  try home_list ls -a "$HOME_OF_TASK"
  try home_read cat "$HOME_OF_TASK/secret"
  try home_gitconfig cat "$HOME_OF_TASK/.gitconfig"
  try home_write sh -c 'echo planted > "$1/planted"' sh "$HOME_OF_TASK"
  try agent_environ cat /proc/$A/environ
  try agent_mem head -c 1 /proc/$A/mem
  try scratch_list ls -a "$(dirname "$LIVE_CI_REPO_DIR")"
  try setuid_python python3 -c 'import os; os.setuid({task_uid})'
  try setuid_setpriv setpriv --reuid={task_uid} --regid={task_uid} --clear-groups true
  try signal_task kill -0 "$P"
  for f in /proc/[0-9]*/environ; do cat "$f"; echo; done >"$OUT/all_environ" 2>/dev/null
  echo "done"
}} >"$OUT/report" 2>&1
"#,
        out = out.display(),
        home = task_home.display(),
        task_uid = TASK_UID,
    )
}

/// The canary: a value no other process has.
fn canary() -> String {
    format!("canary-{}", unique("sandbox"))
}

/// Runs terra-run's plan of one unit with the probe, the binary started as
/// `TASK_UID` with the canary in its environment and home; `child` sets
/// `LIVE_CI_CHILD_UID/GID`. Returns the probe's report and every file the
/// probe wrote, and the task's home.
async fn plan_with_probe(
    child: bool,
    canary: &str,
) -> (BTreeMap<String, String>, tempfile::TempDir) {
    require_root();
    let repo = GitRepo::new();
    repo.unit("dev/app", "1", &[]);
    let commit = repo.commit("app");
    // The repository is the task's to clone (as a remote would be).
    sh(&format!("chown -R {TASK_UID}:{TASK_UID} '{}'", repo.url()));
    // The task's home: only the task's, with a secret and its git configuration.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("secret"), canary).unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        format!("[user]\n\tname = {canary}\n[safe]\n\tdirectory = *\n"),
    )
    .unwrap();
    mode(&home.path().join("secret"), 0o600);
    sh(&format!(
        "chown -R {TASK_UID}:{TASK_UID} '{}'",
        home.path().display()
    ));
    mode(home.path(), 0o700);
    // Where the probe reports, and the probe itself: the child's. The state
    // directory stands for the remote backend the child writes to.
    let out = tempfile::tempdir().unwrap();
    let tools = tempfile::tempdir().unwrap();
    let probe = tools.path().join("probe.sh");
    std::fs::write(&probe, probe_script(out.path(), home.path())).unwrap();
    mode(tools.path(), 0o755);
    mode(&probe, 0o755);
    let who = if child { CHILD_UID } else { TASK_UID };
    sh(&format!("chown {who}:{who} '{}'", out.path().display()));
    let tf = TfTemplates::new(&format!("sh {} \"$PPID\"; ", probe.display()));
    sh(&format!(
        "chown {who}:{who} '{}'",
        tf.state.path().display()
    ));
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let id = format!("run-9-x-dev-app-{}", if child { "101" } else { "102" });
    let mut e = exec(&id, "dev", &[]);
    e.cfg_path = live_ci_core::RepoPath::new("dev/app").unwrap();
    e.plan_command = tf.plan.clone();
    e.apply_command = tf.apply.clone();
    let run_id = metadb
        .create_run(&run(&commit, 1, vec![e]))
        .await
        .unwrap()
        .run_id;
    assert_eq!(metadb.claim_ready(run_id, 10).await.unwrap().len(), 1);
    let bucket = unique("sandbox").to_lowercase();
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk_config())
            .force_path_style(true)
            .build(),
    );
    s3.create_bucket().bucket(&bucket).send().await.unwrap();
    // A real deploy key (the agent refuses anything else); its body is a
    // second canary.
    let keys = tempfile::tempdir().unwrap();
    sh(&format!(
        "ssh-keygen -q -t ed25519 -N '' -C '{canary}' -f '{}/deploy'",
        keys.path().display()
    ));
    let key = std::fs::read_to_string(keys.path().join("deploy")).unwrap();
    let mut env = vec![
        ("METADB_URL", db.url.clone()),
        ("PLAN_BUCKET", bucket.clone()),
        ("REPO_CLONE_URL", repo.url()),
        ("LIVE_CI_PHASE", "plan".into()),
        ("LIVE_CI_EXECUTION_ID", id.clone()),
        ("HOME", home.path().display().to_string()),
        (
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            format!("/v2/credentials/{canary}"),
        ),
        ("GIT_SSH_KEY", key.clone()),
        (
            "TF_CLI_CONFIG_FILE",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/terraformrc").to_string(),
        ),
    ];
    if child {
        env.push(("LIVE_CI_CHILD_UID", CHILD_UID.to_string()));
        env.push(("LIVE_CI_CHILD_GID", CHILD_UID.to_string()));
    }
    let cmd = task("terra-run", &env);
    // As the local cloud's ECS agent starts a task (and as the image's file
    // capabilities would): uid TASK_UID, a member of the child's group,
    // holding only what starting and stopping the child needs.
    let program = cmd.get_program().to_os_string();
    let args: Vec<_> = cmd.get_args().map(|a| a.to_os_string()).collect();
    let envs: Vec<_> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_os_string(), v?.to_os_string())))
        .collect();
    let mut started = Command::new("setpriv");
    started
        .arg(format!("--reuid={TASK_UID}"))
        .arg(format!("--regid={TASK_UID}"))
        .arg(format!("--groups={CHILD_UID}"))
        .arg("--inh-caps=+setuid,+setgid,+kill")
        .arg("--ambient-caps=+setuid,+setgid,+kill")
        .arg("--")
        .arg(program)
        .args(args)
        .env_clear()
        .envs(envs)
        .current_dir("/");
    let output = started.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stdout.contains("live-ci: plan saved to"),
        "the plan ran as the child: {stdout}\n{stderr}"
    );
    assert!(
        metadb.saved_plan(&id).await.unwrap().is_some(),
        "the task recorded the child's plan"
    );
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(out.path()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let bytes = std::fs::read(entry.path()).unwrap();
        files.insert(name, String::from_utf8_lossy(&bytes).into_owned());
    }
    assert!(
        files.get("report").is_some_and(|r| r.contains("done")),
        "the probe ran to its end: {files:?}\n{stdout}\n{stderr}"
    );
    // The deploy key's body is in nothing the child read either.
    let body: Vec<&str> = key
        .lines()
        .filter(|l| !l.starts_with("-----") && !l.trim().is_empty())
        .collect();
    for (name, content) in &files {
        assert!(
            !body.iter().any(|line| content.contains(line)),
            "the child read the deploy key into {name}"
        );
    }
    db.drop_db().await;
    (files, home)
}

/// The report's `name: value` lines.
fn report(files: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    files["report"]
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_child_user_reaches_nothing_of_the_task() {
    let canary = canary();
    let (files, home) = plan_with_probe(true, &canary).await;
    let r = report(&files);
    let all = format!("{files:#?}");
    // Another user, with no group of the task's, no capability, and no way
    // to gain one.
    assert_eq!(r["uid"], CHILD_UID.to_string(), "{all}");
    assert_eq!(r["gid"], CHILD_UID.to_string(), "{all}");
    assert_eq!(r["groups"], CHILD_UID.to_string(), "{all}");
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(r[set], "0000000000000000", "{set} of the child: {all}");
    }
    assert_eq!(r["NoNewPrivs"], "1", "{all}");
    // The task is non-dumpable: its /proc files are root's.
    assert_eq!(r["task_proc_owner"], "0", "{all}");
    // The deploy key is in an agent of the child's uid, which the child may
    // use (its socket) but not read: the agent is non-dumpable.
    assert!(r["agent_socket"].ends_with("agent.sock"), "{all}");
    assert_eq!(r["agent_uid"], CHILD_UID.to_string(), "{all}");
    for attempt in [
        "environ_1",
        "environ_task",
        "mem_task",
        "home_list",
        "home_read",
        "home_gitconfig",
        "home_write",
        "agent_environ",
        "agent_mem",
        "scratch_list",
        "setuid_python",
        "setuid_setpriv",
        "signal_task",
    ] {
        assert_eq!(r[attempt], "denied", "{attempt}: {all}");
    }
    // Open refused, not merely unreadable at offset 0.
    assert!(
        files["mem_task.err"].contains("Permission denied"),
        "{}",
        files["mem_task.err"]
    );
    // Nothing was planted in the task's home, and the canary is in nothing
    // the child read: every environment it could open, the task's command
    // line, every file it wrote.
    assert!(!home.path().join("planted").exists());
    for (name, content) in &files {
        assert!(
            !content.contains(&canary),
            "the child read the canary into {name}: {content}"
        );
    }
}

/// Without a child user (`LIVE_CI_CHILD_UID` unset) the child shares the
/// task's uid; the task being non-dumpable still keeps its environment and
/// memory from it (its home does not: what the separate uid is for).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_dumpable_task_keeps_its_environment_from_a_same_uid_child() {
    let canary = canary();
    let (files, _home) = plan_with_probe(false, &canary).await;
    let r = report(&files);
    let all = format!("{files:#?}");
    assert_eq!(r["uid"], TASK_UID.to_string(), "{all}");
    assert_eq!(r["task_proc_owner"], "0", "{all}");
    for attempt in ["environ_task", "mem_task"] {
        assert_eq!(r[attempt], "denied", "{attempt}: {all}");
    }
    for name in ["environ_task.out", "mem_task.out", "all_environ"] {
        assert!(
            !files[name].contains(&canary),
            "the child read the canary into {name}: {}",
            files[name]
        );
    }
    // The child has none of the task's capabilities either.
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(r[set], "0000000000000000", "{set} of the child: {all}");
    }
}
