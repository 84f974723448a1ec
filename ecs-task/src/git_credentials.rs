//! Private module sources over HTTPS (`git::https://github.com/acme/modules.git`):
//! a GitHub App's separate module-source token (`contents: read` on exactly
//! the module's `module_source_repositories`, never the job's own token)
//! reaches terraform and terragrunt through git's `store` credential helper,
//! keyed to the GitHub host alone, in a file of the child's private home that
//! the child user writes and owns (`0600`).
//!
//! Why a file and not the environment: git asks the helper only for that host,
//! so the token is not in the environment every program of the child inherits
//! and prints (`env`, a crash dump, a provider's debug log), and it is not in
//! the task's environment at all. Why the child's own file: the task (another
//! uid) is the only other process that could read it, and it already holds
//! the token. Code the child runs can still read it — it is the child's — so
//! the token is limited to reading the listed repositories, and a fork's
//! `/live-ci plan` gets none unless the module says so
//! (`module_sources_for_forks`).
//!
//! The token is kept fresh for the task's lifetime ([`keep_fresh`]): a plan
//! task that waits for its apply installs a current one in the apply's new
//! home ([`install`], called by `sandbox::private_dirs`).

use std::future::Future;
use std::io::Write;
use std::path::Path;
use std::sync::RwLock;
use std::time::Duration;

use crate::error::{Result, TaskError};

/// The file the token is stored in, in the child's home (git's own default
/// name for the `store` helper).
pub(crate) const FILE: &str = ".git-credentials";

/// The user name GitHub expects beside an installation token.
pub(crate) const USER: &str = "x-access-token";

/// How often [`keep_fresh`] asks the client (which answers from its cache
/// until shortly before the token expires).
const REFRESH_EVERY: Duration = Duration::from_secs(60);

/// Where module sources live and the token that reads them.
#[derive(Clone, PartialEq, Eq)]
pub struct Access {
    /// `https://github.com`, `https://ghe.example.com`, or in tests
    /// `http://127.0.0.1:<port>`: scheme, host and port only.
    pub url: String,
    /// The installation token git presents (the credential helper reads it).
    pub token: String,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("url", &self.url)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// The task's current module-source access; `None` gives children none.
static ACCESS: RwLock<Option<Access>> = RwLock::new(None);

/// Sets (or clears) what [`install`] gives the children started from now on.
pub(crate) fn provide(access: Option<Access>) {
    let mut current = ACCESS.write().unwrap_or_else(|e| e.into_inner());
    *current = access;
}

fn current() -> Option<Access> {
    ACCESS.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Fetches a first token with `fetch` (an error is the caller's), provides
/// it for `url`, then keeps asking every minute in the background so that
/// [`install`] always hands out one that is not about to expire. A failed
/// refresh keeps the last token (it fails by itself once expired) and says so.
pub async fn keep_fresh<F, Fut, E>(url: String, fetch: F) -> std::result::Result<(), E>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = std::result::Result<String, E>> + Send,
    E: std::fmt::Display,
{
    let token = fetch().await?;
    provide(Some(Access {
        url: url.clone(),
        token,
    }));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(REFRESH_EVERY).await;
            match fetch().await {
                Ok(token) => provide(Some(Access {
                    url: url.clone(),
                    token,
                })),
                Err(e) => tracing::warn!(error = %e, "refreshing the module source token"),
            }
        }
    });
    Ok(())
}

/// Gives the child whose home is `home` the current token, if any: writes
/// `home/.git-credentials` as the child user (its own file, `0600`) and
/// returns the git configuration that makes git use it for the host alone
/// (every other helper reset for that host, so git hands the token to no
/// other helper). Empty without access.
pub fn install(home: &Path) -> Result<String> {
    let Some(access) = current() else {
        return Ok(String::new());
    };
    let bad = |reason: String| TaskError::Io(format!("module source credentials: {reason}"));
    let url = reqwest::Url::parse(&access.url)
        .map_err(|e| bad(format!("the git url {:?}: {e}", access.url)))?;
    let host = url
        .host_str()
        .filter(|_| matches!(url.scheme(), "http" | "https"))
        .ok_or_else(|| bad(format!("the git url {:?} is no http(s) host", access.url)))?;
    let origin = match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    };
    // The token goes into a URL and the file's one line: refuse anything
    // that could change either (GitHub's tokens are [A-Za-z0-9_]).
    if access.token.is_empty()
        || !access
            .token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(bad(
            "github answered a token of unexpected characters".into()
        ));
    }
    let file = home.join(FILE);
    let path = file.display().to_string();
    // The path goes into a git configuration value run by a shell.
    if !path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'))
    {
        return Err(bad(format!(
            "the home {path:?} cannot be named in git's configuration"
        )));
    }
    let line = format!(
        "{}://{USER}:{}@{}\n",
        url.scheme(),
        access.token,
        origin.split_once("://").map_or("", |(_, h)| h)
    );
    write_private(&file, line.as_bytes())?;
    Ok(format!(
        "[credential \"{origin}\"]\n\thelper =\n\thelper = store --file={path}\n"
    ))
}

/// Creates `path` with `contents`, readable by its owner alone: the child
/// user when there is one (written by a process of that uid, so the file is
/// its own without the task needing `CAP_CHOWN`), else this process.
fn write_private(path: &Path, contents: &[u8]) -> Result<()> {
    let Some(user) = crate::sandbox::child_user() else {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| TaskError::file("writing", path, e))?;
        return file
            .write_all(contents)
            .map_err(|e| TaskError::file("writing", path, e));
    };
    use std::os::unix::process::CommandExt;
    // `set -C`: never through a name that already exists (a planted link).
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg("umask 077 && set -C && cat > \"$1\"")
        .arg("sh")
        .arg(path)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .gid(user.gid)
        .uid(user.uid)
        .spawn()
        .map_err(|e| TaskError::file("writing", path, e))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(contents)
            .map_err(|e| TaskError::file("writing", path, e))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| TaskError::file("writing", path, e))?;
    if !out.status.success() {
        return Err(TaskError::file(
            "writing",
            path,
            std::io::Error::other(format!(
                "as the child user {}: {}",
                user.uid,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test: the access is process-wide.
    #[test]
    fn the_token_is_stored_for_the_host_alone_in_an_owner_only_file() {
        let home = tempfile::tempdir().unwrap();
        provide(None);
        assert_eq!(install(home.path()).unwrap(), "");
        assert!(!home.path().join(FILE).exists());

        provide(Some(Access {
            url: "http://127.0.0.1:8123/ignored/path".into(),
            token: "ghs_abc123".into(),
        }));
        let config = install(home.path()).unwrap();
        let file = home.path().join(FILE);
        assert_eq!(
            config,
            format!(
                "[credential \"http://127.0.0.1:8123\"]\n\thelper =\n\thelper = store --file={}\n",
                file.display()
            )
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "http://x-access-token:ghs_abc123@127.0.0.1:8123\n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // Never written through an existing name.
        assert!(install(home.path()).is_err());

        provide(Some(Access {
            url: "https://github.com".into(),
            token: "ghs_x\n[credential]".into(),
        }));
        let other = tempfile::tempdir().unwrap();
        let err = install(other.path()).unwrap_err().to_string();
        assert!(err.contains("unexpected characters"), "{err}");
        assert!(!err.contains("ghs_x"), "the token is never echoed: {err}");
        assert!(format!("{:?}", current()).contains("<redacted>"));
        provide(None);
    }
}
