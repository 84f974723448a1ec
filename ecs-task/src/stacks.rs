//! Writes what the live repository's `terragrunt.stack.hcl` files generate
//! into a checkout, as `terragrunt stack generate` would, so terraform finds
//! the generated units on disk. The layout is the engine's
//! (`live_ci_terragrunt::discovery::generate_stacks`), the one discovery planned;
//! this is the one place ecs-task writes it. It runs before the checkout is
//! shared with the child ([`crate::sandbox::share_checkout`]), so generated
//! files get the committed files' ownership: the task's, readable by the child.

use std::path::{Component, Path};

use live_ci_git::FsTree;
use live_ci_terragrunt::discovery::{GeneratedFile, generate_stacks};

use crate::error::{Result, TaskError};

/// Generates every stack of the checkout at `dir`; returns how many files it
/// wrote. Stacks live-ci cannot generate are left alone here: change
/// detection fails a run that touches one, before anything is written.
pub(crate) fn write_generated(dir: &Path) -> Result<usize> {
    let (_, generation) = generate_stacks(&FsTree::new(dir))?;
    for replaced in &generation.replaced {
        let path = dir.join(replaced.as_str());
        refuse_links(dir, replaced.as_str())?;
        match std::fs::symlink_metadata(&path) {
            // What is there is replaced, as terragrunt regenerates the stack.
            Ok(_) => {
                std::fs::remove_dir_all(&path).map_err(|e| TaskError::file("removing", &path, e))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(TaskError::file("reading", &path, e)),
        }
    }
    for (to, what) in &generation.files {
        refuse_links(dir, to.as_str())?;
        let target = dir.join(to.as_str());
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| TaskError::file("creating", parent, e))?;
        }
        match what {
            GeneratedFile::Copy(from) => {
                refuse_links(dir, from.as_str())?;
                let source = dir.join(from.as_str());
                std::fs::copy(&source, &target)
                    .map_err(|e| TaskError::file("copying", &source, e))?;
            }
            GeneratedFile::Values(text) => {
                std::fs::write(&target, text)
                    .map_err(|e| TaskError::file("writing", &target, e))?;
            }
        }
    }
    Ok(generation.files.len())
}

/// Refuses a repository path any existing component of which is a symbolic
/// link: a committed link (`live/.terragrunt-stack -> /etc`) would otherwise
/// make the task copy outside files in, or write generated files outside the
/// checkout.
fn refuse_links(dir: &Path, rel: &str) -> Result<()> {
    let mut at = dir.to_path_buf();
    for part in Path::new(rel).components() {
        let Component::Normal(name) = part else {
            return Err(TaskError::Io(format!(
                "stack generation: path {rel:?} is not a plain repository path"
            )));
        };
        at.push(name);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(TaskError::Io(format!(
                    "stack generation: {:?} is a symbolic link; live-ci generates stacks only through plain directories and files",
                    at.strip_prefix(dir).unwrap_or(&at).display().to_string()
                )));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(TaskError::file("reading", &at, e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn writes_the_layout_and_refuses_a_committed_symlink_on_the_way() {
        let repo = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let w = |p: &str, c: &str| {
            let f = repo.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, c).unwrap();
        };
        w("units/a/terragrunt.hcl", "# a\n");
        w(
            "live/terragrunt.stack.hcl",
            "unit \"a\" {\n  source = \"../units/a\"\n  path = \"a\"\n  values = { n = 1 }\n}\n",
        );
        assert_eq!(write_generated(repo.path()).unwrap(), 2);
        let generated = repo.path().join("live/.terragrunt-stack/a");
        assert_eq!(
            std::fs::read_to_string(generated.join("terragrunt.hcl")).unwrap(),
            "# a\n"
        );
        assert!(
            std::fs::read_to_string(generated.join("terragrunt.values.hcl"))
                .unwrap()
                .ends_with("n = 1\n")
        );
        // Generated beside the stack file, where the repository holds a link
        // out of the checkout: refused, nothing written outside.
        w(
            "live/terragrunt.stack.hcl",
            "unit \"a\" {\n  source = \"../units/a\"\n  path = \"a\"\n  no_dot_terragrunt_stack = true\n}\n",
        );
        std::os::unix::fs::symlink(outside.path(), repo.path().join("live/a")).unwrap();
        let err = write_generated(repo.path()).unwrap_err().to_string();
        assert!(err.contains("\"live/a\" is a symbolic link"), "{err}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
