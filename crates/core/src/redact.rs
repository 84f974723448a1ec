//! Credentials out of URLs before a URL is shown (errors, logs): the password
//! of `user:password@` (`x-access-token:<token>@` included) and the values of
//! query parameters that carry secrets (`?password=`, `?token=`, signed-URL
//! signatures, …). The one place URLs are redacted.

/// Query parameters whose values are secrets (compared case-insensitively).
const SECRET_PARAMS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "sslpassword",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "auth",
    "authorization",
    "secret",
    "client_secret",
    "key",
    "api_key",
    "apikey",
    "sig",
    "signature",
    "x-amz-signature",
    "x-amz-security-token",
    "x-amz-credential",
];

const HIDDEN: &str = "***";

/// `url` with every credential replaced by `***`; anything else unchanged
/// (a user name without a password stays: it is no secret).
pub fn url(url: &str) -> String {
    let (head, fragment) = match url.split_once('#') {
        Some((h, f)) => (h, Some(f)),
        None => (url, None),
    };
    let (base, query) = match head.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (head, None),
    };
    let mut out = userinfo(base);
    if let Some(q) = query {
        out.push('?');
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) if is_secret_param(name) => format!("{name}={HIDDEN}"),
                _ => pair.to_string(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

fn is_secret_param(name: &str) -> bool {
    SECRET_PARAMS.iter().any(|p| p.eq_ignore_ascii_case(name))
}

/// The authority's `user:password@` with the password hidden.
fn userinfo(base: &str) -> String {
    let Some(scheme_end) = base.find("://").map(|i| i + 3) else {
        return base.to_string();
    };
    let rest = &base[scheme_end..];
    // The last '@' before the query: a password may hold an unencoded '@' or
    // '/'. A path with an '@' may then be hidden too: too much, never too little.
    let Some(at) = rest.rfind('@') else {
        return base.to_string();
    };
    match rest[..at].split_once(':') {
        Some((user, _)) => format!("{}{user}:{HIDDEN}{}", &base[..scheme_end], &rest[at..]),
        None => base.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_credential_is_hidden() {
        assert_eq!(
            url("postgres://me:s3cret@db:5432/x?sslmode=verify-full"),
            "postgres://me:***@db:5432/x?sslmode=verify-full"
        );
        assert_eq!(
            url("https://x-access-token:ghs_abc@github.com/acme/live.git"),
            "https://x-access-token:***@github.com/acme/live.git"
        );
        assert_eq!(
            url("postgres://db/x?user=me&password=s3cret&sslmode=require"),
            "postgres://db/x?user=me&password=***&sslmode=require"
        );
        assert_eq!(
            url("https://h/p?TOKEN=abc&x=1&Access_Token=def#frag"),
            "https://h/p?TOKEN=***&x=1&Access_Token=***#frag"
        );
        assert_eq!(
            url(
                "https://b.s3.amazonaws.com/k?X-Amz-Signature=ff&X-Amz-Security-Token=tt&X-Amz-Expires=60"
            ),
            "https://b.s3.amazonaws.com/k?X-Amz-Signature=***&X-Amz-Security-Token=***&X-Amz-Expires=60"
        );
        // a password holding '@' or '/' is hidden whole
        assert_eq!(url("postgres://me:p@ss/w@db/x"), "postgres://me:***@db/x");
        // nothing secret: unchanged
        for same in [
            "postgres://me@db/x",
            "https://github.com/acme/live",
            "https://h/p?page=2",
            "not a url",
            "git@github.com:acme/live.git",
        ] {
            assert_eq!(url(same), same);
        }
    }
}
