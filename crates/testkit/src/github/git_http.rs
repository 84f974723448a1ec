//! Git's smart HTTP protocol for the fake's private repositories, served by
//! git's own `git http-backend` (CGI): the fake checks the Basic credentials
//! first, as github.com does for a private repository (an installation token
//! covering the repository with `contents: read`, else 401), then hands the
//! request to the real backend.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use wiremock::{Request, ResponseTemplate};

/// The user and password of a `Basic` authorization header.
pub(crate) fn basic_credentials(request: &Request) -> Option<(String, String)> {
    use base64::Engine;
    let value = request.headers.get("authorization")?.to_str().ok()?;
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

/// GitHub's answer to a clone without acceptable credentials.
pub(crate) fn unauthorized() -> ResponseTemplate {
    ResponseTemplate::new(401)
        .insert_header("WWW-Authenticate", "Basic realm=\"GitHub\"")
        .set_body_string("Invalid username or token.\n")
}

/// Runs `git http-backend` for `rest` (below `<repo>.git/`) of the bare
/// repository `bare`, and turns its CGI answer into a response.
pub(crate) fn serve(bare: &Path, rest: &str, user: &str, request: &Request) -> ResponseTemplate {
    let (Some(root), Some(name)) = (bare.parent(), bare.file_name()) else {
        return ResponseTemplate::new(500).set_body_string("bad repository path");
    };
    let header = |name: &str| {
        request
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let mut cmd = Command::new("git");
    cmd.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", format!("/{}/{rest}", name.to_string_lossy()))
        .env("REQUEST_METHOD", request.method.as_str())
        .env("QUERY_STRING", request.url.query().unwrap_or_default())
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", request.body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_USER", user)
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return ResponseTemplate::new(500).set_body_string(format!("git: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A backend that stops reading early answers by itself.
        let _ = stdin.write_all(&request.body);
    }
    let out = match child.wait_with_output() {
        Ok(out) => out,
        Err(e) => return ResponseTemplate::new(500).set_body_string(format!("git: {e}")),
    };
    cgi_response(&out.stdout)
}

/// A CGI answer: headers (`Status:` among them), a blank line, the body.
fn cgi_response(out: &[u8]) -> ResponseTemplate {
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, i + 4))
        .or_else(|| {
            out.windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, i + 2))
        });
    let Some((end, body)) = split else {
        return ResponseTemplate::new(500).set_body_string("git http-backend sent no headers");
    };
    let head = String::from_utf8_lossy(&out[..end]).into_owned();
    let mut status = 200u16;
    let mut headers = Vec::new();
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().to_owned();
        if name.eq_ignore_ascii_case("status") {
            status = value
                .split_whitespace()
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(500);
        } else {
            headers.push((name.trim().to_owned(), value));
        }
    }
    // The body first: the backend's Content-Type must win over any default.
    let mut response = ResponseTemplate::new(status).set_body_bytes(out[body..].to_vec());
    for (name, value) in headers {
        response = response.insert_header(name.as_str(), value.as_str());
    }
    response
}
