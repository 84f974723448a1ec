//! TLS for direct PostgreSQL connections, with libpq's URL parameters: Aurora
//! forces TLS (`rds.force_ssl`), and a connection that does not check the
//! server's certificate and name would hand the metadb's password to anyone on
//! the path.
//!
//! - `sslmode=verify-full` (the default when the URL names none): TLS, the
//!   certificate chains to a trusted CA and names the host (IP or DNS name);
//! - `sslmode=disable`: no TLS, for a server that offers none;
//! - `prefer`, `require` and `verify-ca` are refused: each accepts a server
//!   whose name or certificate is not checked.
//! - `sslrootcert=<file>`: the PEM bundle of trusted CAs; without it the Amazon
//!   RDS global bundle vendored in `crates/metadb/certs/` (`scripts/update-rds-ca.sh`).

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{MetadbError, Result};

/// The Amazon RDS global CA bundle (every region's root and intermediate CAs).
pub const RDS_CA_BUNDLE: &str = include_str!("../certs/rds-global-bundle.pem");

/// How to reach a server: tokio-postgres' configuration and, unless
/// `sslmode=disable`, the verifying TLS connector.
#[derive(Clone)]
pub struct PgTarget {
    /// Host, port, user, database and options parsed from the URL.
    pub config: tokio_postgres::Config,
    /// The verifying TLS connector; `None` with `sslmode=disable`.
    pub tls: Option<MakeRustlsConnect>,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTarget")
            .field("hosts", &self.config.get_hosts())
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Parses a `postgres://` URL, taking out the TLS parameters tokio-postgres
/// does not know.
pub fn parse_url(url: &str) -> Result<PgTarget> {
    let bad = |message: String| MetadbError::Url {
        url: redact(url),
        message,
    };
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let mut kept = Vec::new();
    let mut mode = "verify-full".to_string();
    let mut root_cert: Option<String> = None;
    for pair in query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => mode = percent_decode(value),
            "sslrootcert" => root_cert = Some(percent_decode(value)),
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let mut config: tokio_postgres::Config = rest.parse().map_err(|e| bad(format!("{e}")))?;
    let tls = match mode.as_str() {
        "verify-full" => {
            config.ssl_mode(SslMode::Require);
            let pem = match &root_cert {
                Some(path) => std::fs::read_to_string(path)
                    .map_err(|e| bad(format!("sslrootcert {path:?}: {e}")))?,
                None => RDS_CA_BUNDLE.to_string(),
            };
            let source = root_cert.as_deref().unwrap_or("the vendored RDS bundle");
            Some(connector(&pem).map_err(|e| bad(format!("sslrootcert {source:?}: {e}")))?)
        }
        "disable" => {
            config.ssl_mode(SslMode::Disable);
            None
        }
        other => {
            return Err(bad(format!(
                "sslmode {other:?} is not accepted: it does not verify the server; use verify-full (the default) or disable"
            )));
        }
    };
    Ok(PgTarget { config, tls })
}

/// A rustls connector trusting exactly the certificates of `pem`.
fn connector(pem: &str) -> std::result::Result<MakeRustlsConnect, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        let cert = cert.map_err(|e| format!("not a PEM certificate bundle: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("bad CA certificate: {e}"))?;
    }
    if roots.is_empty() {
        return Err("holds no certificate".into());
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Hides the credentials of a URL quoted by an error message (`user:pass@`,
/// `?password=`, …): [`live_ci_core::redact::url`].
pub(crate) fn redact(url: &str) -> String {
    live_ci_core::redact::url(url)
}

/// `url` with its database replaced, its parameters (TLS settings) kept.
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_end..].find('/') {
        Some(i) => &base[..authority_end + i],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{database}?{q}"),
        None => format!("{base}/{database}"),
    }
}

/// One connection outside the pool (tools and tests: creating databases,
/// reading rows back), with the same TLS rules; its driver runs on a task.
pub async fn connect(url: &str) -> Result<tokio_postgres::Client> {
    let target = parse_url(url)?;
    let client = match target.tls {
        Some(tls) => {
            let (client, connection) = target.config.connect(tls).await?;
            tokio::spawn(connection);
            client
        }
        None => {
            let (client, connection) = target.config.connect(tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            client
        }
    };
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_are_taken_out_and_checked() {
        let t = parse_url("postgres://me@db.example:5432/x").unwrap();
        assert!(
            t.tls.is_some(),
            "verify-full against the RDS bundle by default"
        );
        assert_eq!(t.config.get_ssl_mode(), SslMode::Require);
        let t = parse_url("postgres://me@db/x?sslmode=disable&application_name=a").unwrap();
        assert!(t.tls.is_none());
        assert_eq!(t.config.get_application_name(), Some("a"));
        for mode in ["require", "prefer", "verify-ca"] {
            let err = parse_url(&format!("postgres://me:pw@db/x?sslmode={mode}"))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("sslmode \"{mode}\" is not accepted")),
                "{err}"
            );
            assert!(err.contains("me:***@db"), "{err}");
        }
        let err = parse_url("postgres://db/x?sslrootcert=/nonexistent/ca.pem")
            .unwrap_err()
            .to_string();
        assert!(err.contains("sslrootcert \"/nonexistent/ca.pem\""), "{err}");
    }

    #[test]
    fn the_vendored_bundle_holds_the_rds_roots() {
        let count = CertificateDer::pem_slice_iter(RDS_CA_BUNDLE.as_bytes()).count();
        assert!(count > 100, "{count} certificates");
        assert!(connector(RDS_CA_BUNDLE).is_ok());
        assert!(connector("not pem").is_err());
    }

    #[test]
    fn database_is_replaced_and_parameters_kept() {
        assert_eq!(
            with_database(
                "postgres://u@h:1/postgres?sslmode=verify-full&sslrootcert=/a/b.pem",
                "t1"
            ),
            "postgres://u@h:1/t1?sslmode=verify-full&sslrootcert=/a/b.pem"
        );
        assert_eq!(
            with_database("postgres://u@h:1", "t1"),
            "postgres://u@h:1/t1"
        );
        assert_eq!(percent_decode("%2Fa%2Fb.pem"), "/a/b.pem");
    }
}
