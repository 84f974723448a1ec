//! `git::ssh://` module sources under the child user, through an agent, end
//! to end against a real OpenSSH server: the tests start their own `sshd` on
//! a loopback port (own configuration, host key and authorized keys, no PAM)
//! serving a bare repository that holds a terraform module; a unit whose
//! module block names it is planned by the real `live-ci-task` binary,
//! started as an unprivileged user the way Fargate starts it, with terraform
//! running as the child user.
//! - terra-run (merged code): the clone authenticates through an `ssh-agent`
//!   that runs as the child user and holds the deploy key; a probe in the
//!   plan command finds the key in nothing it can read (its environment, the
//!   scratch files it can reach, every `/proc/*/environ`, the agent's and the
//!   task's `/proc/<pid>/mem` and `environ`), and records what it *can* do:
//!   list the agent's public key.
//! - a wrong host-key pin fails the clone with ssh's "Host key verification
//!   failed", whatever the key.
//! - pr-plan of a head that is not trusted gets no agent: the clone fails with
//!   ssh's "Permission denied (publickey)".
//!
//! The tests run as root (to start sshd and the task as other users) and fail,
//! never skip, when they cannot. `scripts/sshd.sh install` installs Debian's
//! openssh-server when it is missing.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_testkit::aws::sdk_config;
use live_ci_testkit::unique;

use crate::child_env::task;
use crate::support::pg::{TestDb, exec, run};
use crate::support::repo::{GitRepo, TfTemplates};

/// The task's uid, and the child's: `nobody`, because ssh (the client, in
/// the child) refuses to run for a uid without a passwd entry, as the
/// image's `live-ci-child` has one.
const TASK_UID: u32 = 61021;
const CHILD_UID: u32 = 65534;

fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(out.status.success(), "setting up: {cmd:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A real sshd on 127.0.0.1, serving `<dir>/modules.git` to `root` with
/// the deploy key; killed on drop.
struct Sshd {
    dir: tempfile::TempDir,
    port: u16,
    process: std::process::Child,
    /// The deploy key (private, OpenSSH format).
    key: String,
    /// `[127.0.0.1]:<port> <type> <key>`: the server's real host key line.
    host_line: String,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

impl Sshd {
    fn start() -> Sshd {
        assert_eq!(
            sh("id -u").trim(),
            "0",
            "these tests start sshd: run as root"
        );
        let script = repo_root().join("scripts/sshd.sh");
        let installed = Command::new("bash")
            .arg(&script)
            .arg("install")
            .status()
            .unwrap();
        assert!(installed.success(), "{} install failed", script.display());
        let sshd = sh(&format!("bash '{}' path", script.display()))
            .trim()
            .to_string();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        sh(&format!(
            "ssh-keygen -q -t ed25519 -N '' -C host -f '{d}/host_key' && \
             ssh-keygen -q -t ed25519 -N '' -C deploy -f '{d}/deploy_key' && \
             cp '{d}/deploy_key.pub' '{d}/authorized_keys' && \
             mkdir -p /run/sshd && chmod 0755 /run/sshd"
        ));
        // The module: a bare repository sshd's git-upload-pack serves.
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        std::fs::write(
            work.join("main.tf"),
            "resource \"terraform_data\" \"from_ssh_module\" {\n  input = \"over ssh\"\n}\n",
        )
        .unwrap();
        sh(&format!(
            "cd '{}' && git init -q -b main && git add -A && \
             git -c user.name=t -c user.email=t@example.com commit -q -m module && \
             git clone -q --bare . ../modules.git",
            work.display()
        ));
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::write(
            dir.path().join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n\
                 AuthorizedKeysFile {d}/authorized_keys\nUsePAM no\nStrictModes no\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
                 AllowUsers root\nPidFile {d}/sshd.pid\nLogLevel VERBOSE\n"
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("sshd.log")).unwrap();
        let process = Command::new(&sshd)
            .args(["-D", "-e", "-f"])
            .arg(dir.path().join("sshd_config"))
            .stderr(log)
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let host_pub = std::fs::read_to_string(dir.path().join("host_key.pub")).unwrap();
        let host_line = format!(
            "[127.0.0.1]:{port} {}",
            host_pub
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        );
        let key = std::fs::read_to_string(dir.path().join("deploy_key")).unwrap();
        Sshd {
            port,
            process,
            key,
            host_line,
            dir,
        }
    }

    fn source(&self) -> String {
        format!(
            "git::ssh://root@127.0.0.1:{}{}/modules.git",
            self.port,
            self.dir.path().display()
        )
    }

    /// The key's secret part: the lines of its base64 body, each of which
    /// a probe that read the key would hold.
    fn secret(&self) -> Vec<String> {
        self.key
            .lines()
            .filter(|l| !l.starts_with("-----") && !l.trim().is_empty())
            .map(str::to_string)
            .collect()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

/// What the plan command runs first, as the child: finds the agent, tries its
/// and the task's `/proc` files, lists what it can reach; one `name: value`
/// line per attempt to `<out>/report`, the bytes read to `<out>/<name>.out`.
fn probe_script(out: &Path) -> String {
    format!(
        r#"#!/bin/sh
P="$1"
OUT='{out}'
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
  echo "agent_pid: $A"
  echo "agent_uid: $(stat -c %u /proc/$A 2>/dev/null)"
  echo "agent_proc_owner: $(stat -c %u /proc/$A/environ)"
  echo "agent_dumpable: $(grep -c . /proc/$A/mem 2>/dev/null || echo no)"
  try agent_environ cat /proc/$A/environ
  try agent_mem head -c 1 /proc/$A/mem
  try agent_maps cat /proc/$A/maps
  try agent_cmdline cat /proc/$A/cmdline
  try task_environ cat /proc/$P/environ
  try task_mem head -c 1 /proc/$P/mem
  try agent_list env SSH_AUTH_SOCK="$SOCK" ssh-add -L
  try agent_dir_list ls -a "$(dirname "$SOCK")"
  try scratch_list ls -a "$(dirname "$LIVE_CI_REPO_DIR")"
  env >"$OUT/child_env"
  for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat "$f"; echo; done >"$OUT/all_proc" 2>/dev/null
  # Every directory the child is told of (its environment, the ssh command's
  # files), and what it can find from there.
  DIRS="$(dirname "$LIVE_CI_REPO_DIR") $HOME $TMPDIR"
  for p in $(printf '%s' "$GIT_SSH_COMMAND" | tr ' =' '\n\n' | tr -d "'" | grep '^/'); do
    DIRS="$DIRS $(dirname "$p")"
  done
  find $DIRS -type f -readable -exec cat {{}} + >"$OUT/readable_files" 2>/dev/null
  echo "done"
}} >"$OUT/report" 2>&1
"#,
        out = out.display(),
    )
}

/// The report's `name: value` lines.
fn report(files: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    files
        .get("report")
        .map(|r| {
            r.lines()
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// terra-run's plan of a unit using the SSH module, the binary started as
/// `TASK_UID` with the deploy key and `pins`; the task's output and the files
/// the probe wrote.
async fn terra_run_plan(sshd: &Sshd, pins: &str) -> (String, BTreeMap<String, String>) {
    let repo = GitRepo::new();
    repo.unit("dev/app", "1", &[]);
    repo.write(
        "dev/app/main.tf",
        &format!(
            "terraform {{\n  backend \"local\" {{}}\n}}\n\nmodule \"over_ssh\" {{\n  source = \"{}\"\n}}\n",
            sshd.source()
        ),
    );
    let commit = repo.commit("use the ssh module");
    sh(&format!("chown -R {TASK_UID}:{TASK_UID} '{}'", repo.url()));
    let home = tempfile::tempdir().unwrap();
    sh(&format!(
        "chown -R {TASK_UID}:{TASK_UID} '{}'",
        home.path().display()
    ));
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = tempfile::tempdir().unwrap();
    let tools = tempfile::tempdir().unwrap();
    let probe = tools.path().join("probe.sh");
    std::fs::write(&probe, probe_script(out.path())).unwrap();
    std::fs::set_permissions(tools.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tf = TfTemplates::new(&format!("sh {} \"$PPID\"; ", probe.display()));
    for dir in [out.path(), tf.state.path()] {
        sh(&format!(
            "chown {CHILD_UID}:{CHILD_UID} '{}'",
            dir.display()
        ));
    }
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let id = format!("run-9-x-dev-app-{}", &unique("ssh")[..8]);
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
    let bucket = unique("gitssh").to_lowercase();
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk_config())
            .force_path_style(true)
            .build(),
    );
    s3.create_bucket().bucket(&bucket).send().await.unwrap();
    let env = vec![
        ("METADB_URL", db.url.clone()),
        ("PLAN_BUCKET", bucket.clone()),
        ("REPO_CLONE_URL", repo.url()),
        ("LIVE_CI_PHASE", "plan".into()),
        ("LIVE_CI_EXECUTION_ID", id.clone()),
        ("HOME", home.path().display().to_string()),
        ("GIT_SSH_KEY", sshd.key.clone()),
        ("SSH_KNOWN_HOSTS", pins.to_string()),
        (
            "TF_CLI_CONFIG_FILE",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/terraformrc").to_string(),
        ),
        ("LIVE_CI_CHILD_UID", CHILD_UID.to_string()),
        ("LIVE_CI_CHILD_GID", CHILD_UID.to_string()),
    ];
    let cmd = task("terra-run", &env);
    let program = cmd.get_program().to_os_string();
    let args: Vec<_> = cmd.get_args().map(|a| a.to_os_string()).collect();
    let envs: Vec<_> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_os_string(), v?.to_os_string())))
        .collect();
    // As the local cloud's ECS agent (and Fargate, with the image's file
    // capabilities) starts a task: see sandbox.rs.
    let output = Command::new("setpriv")
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
        .current_dir("/")
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(out.path()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let bytes = std::fs::read(entry.path()).unwrap();
        files.insert(name, String::from_utf8_lossy(&bytes).into_owned());
    }
    db.drop_db().await;
    (text, files)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merged_code_clones_an_ssh_module_through_the_childs_agent_and_never_reads_the_key() {
    let sshd = Sshd::start();
    let (text, files) = terra_run_plan(&sshd, &sshd.host_line).await;
    let all = format!("{text}\n{files:#?}\nsshd:\n{}", sshd.log());
    assert!(
        text.contains("live-ci: plan saved to") && text.contains("terraform_data.from_ssh_module"),
        "the plan has the ssh module's resource: {all}"
    );
    // sshd accepted the deploy key (from the agent: there is no key file).
    assert!(sshd.log().contains("Accepted publickey for root"), "{all}");
    let r = report(&files);
    assert_eq!(r.get("uid").map(String::as_str), Some("65534"), "{all}");
    // The agent runs as the child user and is non-dumpable: its /proc files
    // are root's, so the child can neither read its memory nor environment.
    assert_eq!(r["agent_uid"], CHILD_UID.to_string(), "{all}");
    assert_eq!(r["agent_proc_owner"], "0", "{all}");
    for attempt in [
        "agent_environ",
        "agent_mem",
        "agent_maps",
        "task_environ",
        "task_mem",
        "agent_dir_list",
        "scratch_list",
    ] {
        assert_eq!(r[attempt], "denied", "{attempt}: {all}");
    }
    assert!(
        files["agent_mem.err"].contains("Permission denied"),
        "{all}"
    );
    // What the child can do: use the agent (list its public key; sign).
    assert_eq!(r["agent_list"], "allowed", "{all}");
    let public = std::fs::read_to_string(sshd.dir.path().join("deploy_key.pub")).unwrap();
    let public = public.split_whitespace().nth(1).unwrap();
    assert!(files["agent_list.out"].contains(public), "{all}");
    // The key itself is in nothing the child read or the task printed.
    let secret = sshd.secret();
    assert!(secret.len() > 2, "{secret:?}");
    // Read files the probe reached, or the run would prove nothing.
    assert!(
        files["readable_files"].contains("ssh-ed25519"),
        "the pins: {all}"
    );
    for (name, content) in files.iter().chain([(&"output".to_string(), &text)]) {
        assert!(
            !secret.iter().any(|line| content.contains(line)) && !content.contains("PRIVATE KEY"),
            "the child read the key into {name}: {content}"
        );
    }
    // The agent is gone with the task.
    let pid = &r["agent_pid"];
    assert!(
        !Path::new(&format!("/proc/{pid}/comm")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default()
                != "ssh-agent\n",
        "the agent {pid} outlived the task: {all}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_host_key_pin_fails_the_clone_whatever_the_key() {
    let sshd = Sshd::start();
    // A pin for the right address, of another key.
    let other = tempfile::tempdir().unwrap();
    sh(&format!(
        "ssh-keygen -q -t ed25519 -N '' -f '{}/other'",
        other.path().display()
    ));
    let other_pub = std::fs::read_to_string(other.path().join("other.pub")).unwrap();
    let pin = format!(
        "[127.0.0.1]:{} {}",
        sshd.port,
        other_pub
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let (text, _files) = terra_run_plan(&sshd, &pin).await;
    let all = format!("{text}\nsshd:\n{}", sshd.log());
    assert!(!text.contains("live-ci: plan saved to"), "{all}");
    assert!(text.contains("Host key verification failed"), "{all}");
    assert!(!sshd.log().contains("Accepted publickey"), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_not_of_a_trusted_head_gets_no_agent_and_the_clone_is_refused() {
    let sshd = Sshd::start();
    let repo = GitRepo::new();
    repo.unit("dev/app", "1", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write(
        "dev/app/main.tf",
        &format!(
            "terraform {{\n  backend \"local\" {{}}\n}}\n\nmodule \"over_ssh\" {{\n  source = \"{}\"\n}}\n",
            sshd.source()
        ),
    );
    let head = repo.commit("use the ssh module");
    let tf = TfTemplates::new("");
    sh(&format!(
        "chown {CHILD_UID}:{CHILD_UID} '{}'",
        tf.state.path().display()
    ));
    let output = task(
        "pr-plan",
        &[
            ("REPO_CLONE_URL", repo.url()),
            ("PLAN_COMMAND", tf.plan.clone()),
            ("LIVE_CI_PR_NUMBER", "5".into()),
            ("LIVE_CI_COMMIT", head),
            ("LIVE_CI_BASE_REF", "main".into()),
            ("GIT_SSH_KEY", sshd.key.clone()),
            ("SSH_KNOWN_HOSTS", sshd.host_line.clone()),
            ("LIVE_CI_CHILD_UID", CHILD_UID.to_string()),
            ("LIVE_CI_CHILD_GID", CHILD_UID.to_string()),
        ],
    )
    .output()
    .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let all = format!("{text}\nsshd:\n{}", sshd.log());
    assert!(!output.status.success(), "{all}");
    assert!(
        text.contains("the SSH deploy key is not offered to this plan's git::ssh:// module sources: it is not a trusted head's"),
        "{all}"
    );
    // The host was the pinned one; the key was not offered.
    assert!(text.contains("Permission denied (publickey)"), "{all}");
    assert!(!sshd.log().contains("Accepted publickey"), "{all}");
    assert!(
        !sshd.secret().iter().any(|line| text.contains(line)),
        "{all}"
    );
}
