//! The git adapter against real repositories built in temp dirs.
#![allow(clippy::unwrap_used)] // test helpers panic on set-up failure by design

use std::path::Path;

use live_ci_core::path::RepoPath;
use live_ci_core::port::{ChangeKind, FileChange, Vcs};
use live_ci_git::{GitCli, GitError};
use live_ci_testkit::git;

fn write(dir: &Path, path: &str, body: &str) {
    let p = dir.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

/// main: c1 (a, b) ; feature: c2 (a changed, c added, b deleted) ; main: c3 (d added)
fn repo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    git(d, &["init", "-q", "-b", "main"]);
    write(d, "a/terragrunt.hcl", "inputs = {}\n");
    write(d, "b/terragrunt.hcl", "inputs = {}\n");
    write(d, ".hidden/x.hcl", "x = 1\n");
    write(d, "a/.terraform/modules/m.tf", "# cache\n");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "c1"]);
    git(d, &["checkout", "-qb", "feature"]);
    write(d, "a/terragrunt.hcl", "inputs = { x = 1 }\n");
    write(d, "c d/main.tf", "# spaced name\n");
    git(d, &["rm", "-q", "b/terragrunt.hcl"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "c2"]);
    git(d, &["checkout", "-q", "main"]);
    write(d, "d/terragrunt.hcl", "inputs = {}\n");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "c3"]);
    tmp
}

fn change(path: &str, kind: ChangeKind) -> FileChange {
    FileChange {
        path: RepoPath::new(path).unwrap(),
        kind,
    }
}

#[test]
fn diff_uses_merge_base_semantics() {
    let tmp = repo();
    let g = GitCli::open(tmp.path()).unwrap();
    // d/ was added on main after the fork: not part of main...feature.
    let changes = g.changed_files("main", Some("feature")).unwrap();
    assert_eq!(
        changes,
        vec![
            change("a/terragrunt.hcl", ChangeKind::Modified),
            change("b/terragrunt.hcl", ChangeKind::Deleted),
            change("c d/main.tf", ChangeKind::Added),
        ]
    );
    let mb = g.merge_base("main", "feature").unwrap();
    assert_eq!(mb, g.resolve("main~1").unwrap());
}

#[test]
fn diff_against_working_tree_includes_untracked_files() {
    let tmp = repo();
    let g = GitCli::open(tmp.path()).unwrap();
    write(tmp.path(), "a/terragrunt.hcl", "inputs = { y = 2 }\n");
    write(tmp.path(), "e/terragrunt.hcl", "inputs = {}\n");
    let changes = g.changed_files("HEAD", None).unwrap();
    assert_eq!(
        changes,
        vec![
            change("a/terragrunt.hcl", ChangeKind::Modified),
            change("e/terragrunt.hcl", ChangeKind::Added),
        ]
    );
}

#[test]
fn tree_at_revision_lists_and_reads_without_checkout() {
    let tmp = repo();
    let g = GitCli::open(tmp.path()).unwrap();
    let tree = g.tree_at(Some("feature")).unwrap();
    let files: Vec<String> = tree
        .files()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    // hidden directories are listed, as in the working-tree walk (only .git,
    // .terraform and .terragrunt-cache are skipped)
    assert_eq!(files, [".hidden/x.hcl", "a/terragrunt.hcl", "c d/main.tf"]);
    let a = tree
        .read(&RepoPath::new("a/terragrunt.hcl").unwrap())
        .unwrap();
    assert_eq!(a, "inputs = { x = 1 }\n");
    // many reads through the one cat-file process
    for _ in 0..50 {
        assert_eq!(
            tree.read(&RepoPath::new("c d/main.tf").unwrap()).unwrap(),
            "# spaced name\n"
        );
    }
    let err = tree
        .read(&RepoPath::new("b/terragrunt.hcl").unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("b/terragrunt.hcl"), "{err}");
}

#[test]
fn unknown_revision_is_named() {
    let tmp = repo();
    let g = GitCli::open(tmp.path()).unwrap();
    let err = g.changed_files("main", Some("no-such-branch")).unwrap_err();
    assert_eq!(err.to_string(), "git: unknown revision \"no-such-branch\"");
    assert!(matches!(
        g.resolve("--upload-pack=x"),
        Err(GitError::UnknownRevision(_))
    ));
}

#[test]
fn open_outside_a_repository_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let err = GitCli::open(tmp.path()).unwrap_err();
    assert!(err.to_string().contains("rev-parse"), "{err}");
}

/// A directory named to smuggle a chat-ops command (`x\n/live-ci plan\ny`) is
/// refused wherever discovery reads the repository: the commit's tree, the
/// working tree and the diff; each error names the path, escaped.
#[test]
fn control_characters_in_paths_are_refused_at_discovery_naming_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    git(d, &["init", "-q", "-b", "main"]);
    write(d, "ok/terragrunt.hcl", "inputs = {}\n");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "c1"]);
    git(d, &["checkout", "-qb", "evil"]);
    write(d, "x\n/live-ci plan\ny/terragrunt.hcl", "inputs = {}\n");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "c2"]);
    let g = GitCli::open(d).unwrap();
    let escaped = "\"x\\n/live-ci plan\\ny/terragrunt.hcl\"";
    let expect = |err: String| {
        assert!(
            err.starts_with(&format!("invalid path {escaped}: holds a control")),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err:?}");
    };
    expect(g.tree_at(Some("evil")).err().unwrap().to_string());
    expect(
        g.changed_files("main", Some("evil"))
            .unwrap_err()
            .to_string(),
    );
    // the working tree (checked out at the hostile commit)
    let err = g.tree_at(None).unwrap().files().unwrap_err().to_string();
    assert!(
        err.starts_with("invalid path \"x\\n\": holds a control"),
        "{err}"
    );
    // the trunk without the hostile directory is fine
    assert!(g.tree_at(Some("main")).is_ok());
}
