//! A run's checkout packed once and unpacked by every terra-run of the run
//! (issue 17): create-deploy-stack packs the merge commit's one-commit checkout
//! (work tree and `.git`, as [`crate::checkout::Checkout::commit_only`] would
//! fetch it) into a tar archive; terra-run unpacks it into its scratch
//! directory instead of fetching the commit from the repository, which in AWS
//! is one clone from GitHub per task.
//!
//! The archive is deterministic (entries sorted, fixed times and owners, modes
//! 0644/0755 as git keeps them), so packing the same commit twice gives the
//! same bytes. Unpacking checks every entry before writing any: a path that is
//! absolute or climbs with `..`, an entry written through a symbolic link the
//! archive made, a hard link, or a device is refused, and nothing is written.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use tar::{Archive, Builder, EntryType, HeaderMode};

/// What is left out of the packed `.git`: the fetch's record of where it
/// fetched from (create-deploy-stack's scratch path), and git's sample hooks.
const SKIPPED_IN_GIT: &[&str] = &["FETCH_HEAD", "hooks"];

/// Packs the checkout at `dir` (its work tree and `.git`) as a tar archive,
/// paths relative to `dir`. Symbolic links are kept as links, never followed.
pub fn pack(dir: &Path) -> Result<Vec<u8>, String> {
    let mut builder = Builder::new(Vec::new());
    builder.mode(HeaderMode::Deterministic);
    builder.follow_symlinks(false);
    let mut entries = Vec::new();
    walk(dir, Path::new(""), &mut entries)?;
    for rel in entries {
        let full = dir.join(&rel);
        builder
            .append_path_with_name(&full, &rel)
            .map_err(|e| format!("packing {:?}: {e}", full.display().to_string()))?;
    }
    builder.into_inner().map_err(|e| {
        format!(
            "finishing the archive of {:?}: {e}",
            dir.display().to_string()
        )
    })
}

/// Every path under `dir/rel`, parents before children, in byte order of the
/// names (so the archive does not depend on the file system's order).
fn walk(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let here = dir.join(rel);
    let read = |e: std::io::Error| format!("reading {:?}: {e}", here.display().to_string());
    let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(&here)
        .map_err(read)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(read)?;
    names.sort();
    for name in names {
        let child = rel.join(&name);
        if rel == Path::new(".git") && SKIPPED_IN_GIT.iter().any(|s| name == *s) {
            continue;
        }
        let meta = std::fs::symlink_metadata(dir.join(&child))
            .map_err(|e| format!("reading {:?}: {e}", dir.join(&child).display().to_string()))?;
        out.push(child.clone());
        if meta.is_dir() {
            walk(dir, &child, out)?;
        }
    }
    Ok(())
}

/// Unpacks the archive `bytes` into `dest` (created if missing; it should be
/// empty). Every entry is checked first, and nothing is written when one is
/// refused; the error names the entry.
pub fn unpack(bytes: &[u8], dest: &Path) -> Result<(), String> {
    check_entries(bytes)?;
    std::fs::create_dir_all(dest)
        .map_err(|e| format!("creating {:?}: {e}", dest.display().to_string()))?;
    let mut archive = Archive::new(bytes);
    // Times as a fresh checkout has them (now); modes as git keeps them.
    archive.set_preserve_mtime(false);
    archive.set_preserve_permissions(false);
    archive.set_overwrite(false);
    let entries = archive
        .entries()
        .map_err(|e| format!("reading the archive: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("reading the archive: {e}"))?;
        let path = entry_path(&entry)?;
        // `unpack_in` checks again that the entry lands inside `dest`.
        let inside = entry
            .unpack_in(dest)
            .map_err(|e| format!("unpacking {path:?}: {e}"))?;
        if !inside {
            return Err(format!(
                "entry {path:?} would be written outside the checkout"
            ));
        }
    }
    Ok(())
}

/// The checks of [`unpack`], over the whole archive before anything is written.
fn check_entries(bytes: &[u8]) -> Result<(), String> {
    let mut archive = Archive::new(bytes);
    let entries = archive
        .entries()
        .map_err(|e| format!("reading the archive: {e}"))?;
    let mut links: BTreeSet<PathBuf> = BTreeSet::new();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading the archive: {e}"))?;
        let shown = entry_path(&entry)?;
        let refuse = |why: &str| format!("entry {shown:?} {why}; nothing was unpacked");
        let rel = relative(Path::new(&shown)).map_err(refuse)?;
        let kind = entry.header().entry_type();
        if !matches!(
            kind,
            EntryType::Regular | EntryType::Directory | EntryType::Symlink
        ) {
            return Err(refuse(&format!(
                "is a {kind:?} entry: a checkout holds files, directories and symbolic links only"
            )));
        }
        // A link made by this archive, then a write through it, would land
        // wherever the link points.
        if let Some(link) = rel.ancestors().skip(1).find(|a| links.contains(*a)) {
            return Err(refuse(&format!(
                "goes through the symbolic link {:?} the archive made",
                link.display().to_string()
            )));
        }
        if links.contains(&rel) {
            return Err(refuse("replaces the symbolic link the archive made"));
        }
        if !seen.insert(rel.clone()) && kind != EntryType::Directory {
            return Err(refuse("appears twice"));
        }
        if kind == EntryType::Symlink {
            links.insert(rel);
        }
    }
    Ok(())
}

/// An entry's path as text (GNU long names and PAX paths included).
fn entry_path<R: std::io::Read>(entry: &tar::Entry<'_, R>) -> Result<String, String> {
    entry
        .path()
        .map(|p| p.display().to_string())
        .map_err(|e| format!("an entry's path is unreadable: {e}"))
}

/// `path` as a plain relative path inside the checkout: no root, no prefix,
/// no `..`; `.` components dropped.
fn relative(path: &Path) -> Result<PathBuf, &'static str> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::ParentDir => return Err("climbs out with \"..\""),
            Component::RootDir | Component::Prefix(_) => return Err("is an absolute path"),
        }
    }
    if out.as_os_str().is_empty() {
        return Err("names no file");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("dev/app")).unwrap();
        std::fs::write(
            p.join("dev/app/main.tf"),
            "resource \"terraform_data\" \"x\" {}\n",
        )
        .unwrap();
        std::fs::write(p.join("run.sh"), "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("dev/app", p.join("app")).unwrap();
        std::fs::create_dir_all(p.join(".git/hooks")).unwrap();
        std::fs::write(p.join(".git/HEAD"), "0123\n").unwrap();
        std::fs::write(p.join(".git/FETCH_HEAD"), "/scratch/of/the/packer\n").unwrap();
        std::fs::write(p.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        dir
    }

    #[test]
    fn a_packed_tree_unpacks_as_it_was_and_packs_to_the_same_bytes() {
        let src = tree();
        let bytes = pack(src.path()).unwrap();
        assert_eq!(bytes, pack(src.path()).unwrap(), "deterministic");
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("repo");
        unpack(&bytes, &dest).unwrap();
        assert_eq!(
            std::fs::read_to_string(dest.join("dev/app/main.tf")).unwrap(),
            "resource \"terraform_data\" \"x\" {}\n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dest.join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "the executable bit is kept: {mode:o}");
        assert_eq!(
            std::fs::read_link(dest.join("app")).unwrap(),
            Path::new("dev/app")
        );
        assert!(dest.join(".git/HEAD").is_file());
        assert!(
            !dest.join(".git/FETCH_HEAD").exists(),
            "the packer's path stays out"
        );
        assert!(!dest.join(".git/hooks").exists());
    }
}
