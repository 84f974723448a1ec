//! The plan's dependency lock file: read back from the plan's unit directory
//! and carried in its sealed JSON, restored before the apply's `init` so the
//! apply selects the providers the plan ran with.

use std::path::Path;

use crate::error::{Result, TaskError};
use crate::output::say;
use crate::sandbox;

/// The most of a lock file read back from the plan's unit directory.
const MAX_LOCK_FILE_BYTES: u64 = 1 << 20;

/// Where terraform keeps the dependency lock file of a unit. Terragrunt
/// copies it from the unit's directory into its cache directory before
/// `init` and back after it (a terragrunt behaviour, not terraform's), so the
/// unit's directory is where both the plan leaves it and the apply finds it.
const LOCK_FILE: &str = ".terraform.lock.hcl";

/// The lock file the plan command left in the unit's directory, if any.
/// Written by repository code: read as untrusted input (no link followed, a
/// size cap), and only text.
pub(super) fn planned_lock(unit_dir: &Path) -> Result<Option<String>> {
    let path = unit_dir.join(LOCK_FILE);
    let refused = |message: String| TaskError::PlanArtifact {
        artifact: path.display().to_string(),
        message,
    };
    match sandbox::read_child_file(&path, MAX_LOCK_FILE_BYTES) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| refused("the plan's lock file is not UTF-8 text: refused".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(refused(format!("the plan's lock file is refused: {e}"))),
    }
}

/// Puts the plan's lock file in the unit's directory of the apply's fresh
/// checkout, in place of whatever is there (a committed lock, or a link the
/// checkout holds, removed rather than followed), owned by the task and
/// readable by the child like every committed file. Nothing to do when the
/// plan had none.
pub(super) fn restore_lock(unit_dir: &Path, lock: Option<&str>) -> Result<()> {
    use std::io::Write;
    let Some(lock) = lock else {
        return Ok(());
    };
    let path = unit_dir.join(LOCK_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(TaskError::file("replacing", &path, e)),
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut f| f.write_all(lock.as_bytes()))
        .map_err(|e| TaskError::file("writing", &path, e))?;
    sandbox::share_read_only(&path, 0o640)?;
    say!("live-ci: the plan's lock file restored to {LOCK_FILE} before the apply");
    Ok(())
}
