//! Fresh checkouts as the ECS tasks make them, from real repositories in temp dirs.
#![allow(clippy::unwrap_used)] // test helpers panic on set-up failure by design

use std::path::Path;

use live_ci_git::{GitCli, GitError};
use live_ci_testkit::git;

fn commit(dir: &Path, file: &str, body: &str, message: &str) -> String {
    std::fs::write(dir.join(file), body).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", message]);
    git(dir, &["rev-parse", "HEAD"])
}

#[test]
fn clones_a_merge_commit_and_finds_its_first_parent() {
    let origin = tempfile::tempdir().unwrap();
    let o = origin.path();
    git(o, &["init", "-q", "-b", "main"]);
    let base = commit(o, "a.tf", "1", "base");
    git(o, &["checkout", "-qb", "feature"]);
    let feature = commit(o, "b.tf", "2", "feature");
    git(o, &["checkout", "-q", "main"]);
    let trunk = commit(o, "c.tf", "3", "trunk moves on");
    git(o, &["merge", "-q", "--no-ff", "-m", "merge", "feature"]);
    let merge = git(o, &["rev-parse", "HEAD"]);
    // A newer commit on main: the checkout must be the merge, not the branch tip.
    commit(o, "d.tf", "4", "later");

    let work = tempfile::tempdir().unwrap();
    let dest = work.path().join("repo");
    let repo = GitCli::clone_at(
        &o.display().to_string(),
        &dest,
        &merge,
        Some("s3cr3t-token"),
    )
    .unwrap();
    assert_eq!(git(&dest, &["rev-parse", "HEAD"]), merge);
    assert!(dest.join("b.tf").is_file() && !dest.join("d.tf").exists());
    assert_eq!(repo.first_parent(&merge).unwrap(), trunk);
    assert_ne!(repo.first_parent(&merge).unwrap(), feature);
    assert_ne!(trunk, base);
    // The token reached no file of the clone.
    let config = std::fs::read_to_string(dest.join(".git/config")).unwrap();
    assert!(!config.contains("s3cr3t-token"), "{config}");
}

#[test]
fn fetches_a_commit_no_branch_reaches_and_names_an_unknown_one() {
    let origin = tempfile::tempdir().unwrap();
    let o = origin.path();
    git(o, &["init", "-q", "-b", "main"]);
    commit(o, "a.tf", "1", "base");
    git(o, &["checkout", "-qb", "fork-pr"]);
    let head = commit(o, "b.tf", "2", "from a fork");
    // As GitHub keeps a fork's pull request: only under refs/pull/N/head.
    git(o, &["update-ref", "refs/pull/7/head", &head]);
    git(o, &["checkout", "-q", "main"]);
    git(o, &["branch", "-qD", "fork-pr"]);

    let work = tempfile::tempdir().unwrap();
    let dest = work.path().join("repo");
    GitCli::clone_at(&o.display().to_string(), &dest, &head, None).unwrap();
    assert_eq!(git(&dest, &["rev-parse", "HEAD"]), head);

    let missing = "0123456789abcdef0123456789abcdef01234567";
    let err = GitCli::clone_at(
        &o.display().to_string(),
        &work.path().join("again"),
        missing,
        None,
    )
    .unwrap_err();
    assert!(
        matches!(err, GitError::UnknownRevision(ref r) if r == missing),
        "{err}"
    );
}

#[test]
fn fetch_commit_checks_out_one_commit_without_its_history() {
    let origin = tempfile::tempdir().unwrap();
    let o = origin.path();
    git(o, &["init", "-q", "-b", "main"]);
    let first = commit(o, "a.txt", "1", "first");
    let second = commit(o, "a.txt", "2", "second");
    commit(o, "a.txt", "3", "third");

    // Not the tip: an older commit by id, as terra-run checks out a run's commit.
    let dest = tempfile::tempdir().unwrap();
    let repo =
        GitCli::fetch_commit(o.to_str().unwrap(), &dest.path().join("r"), &second, None).unwrap();
    assert_eq!(repo.resolve("HEAD").unwrap(), second);
    let dir = dest.path().join("r");
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "2");
    assert_eq!(
        git(&dir, &["rev-list", "--count", "HEAD"]),
        "1",
        "no history"
    );
    assert!(
        repo.resolve(&first).is_err(),
        "older commits are not fetched"
    );
    // The objects stay in the fetched pack, not one loose file each: every
    // terra-run unpacks this `.git` from the run's packed checkout.
    let objects = dir.join(".git/objects");
    let mut loose = Vec::new();
    for entry in std::fs::read_dir(&objects).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name != "pack" && name != "info" {
            loose.push(name);
        }
    }
    assert!(loose.is_empty(), "loose object directories: {loose:?}");
    let packs = std::fs::read_dir(objects.join("pack"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("pack".as_ref()))
        .count();
    assert_eq!(packs, 1);

    // A commit the remote does not have: the full clone's clear error.
    let missing = "0123456789abcdef0123456789abcdef01234567";
    let err = GitCli::fetch_commit(o.to_str().unwrap(), &dest.path().join("m"), missing, None)
        .unwrap_err();
    assert!(
        matches!(err, GitError::UnknownRevision(ref c) if c == missing),
        "{err}"
    );
}

#[test]
fn open_detached_reads_what_git_resolves_and_refuses_a_branch_head() {
    let origin = tempfile::tempdir().unwrap();
    let o = origin.path();
    git(o, &["init", "-q", "-b", "main"]);
    let first = commit(o, "a.txt", "1", "first");
    commit(o, "a.txt", "2", "second");
    let dest = tempfile::tempdir().unwrap();
    let dir = dest.path().join("r");
    let fetched = GitCli::fetch_commit(o.to_str().unwrap(), &dir, &first, None).unwrap();
    let (opened, head) = GitCli::open_detached(&dir).unwrap();
    assert_eq!(head, fetched.resolve("HEAD").unwrap());
    assert_eq!(head, first);
    assert_eq!(opened.dir(), fetched.dir(), "the top git itself names");

    // The origin's HEAD names its branch: git resolves it, this refuses it.
    let err = GitCli::open_detached(o).unwrap_err();
    assert!(
        matches!(&err, GitError::NotACheckout { path, message }
            if path.ends_with(".git/HEAD") && message.contains("ref: refs/heads/main")),
        "{err}"
    );
    let err = GitCli::open_detached(dest.path()).unwrap_err();
    assert!(err.to_string().contains(".git"), "{err}");
}
