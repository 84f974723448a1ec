//! Credentials out of URLs before a URL is shown (errors, logs): the password
//! of `user:password@` (`x-access-token:<token>@` included) and the values of
//! query parameters that carry secrets (`?password=`, `?token=`, signed-URL
//! signatures, …). The one place URLs are redacted.

/// Parts of query parameter names whose values are secrets: a name holding
/// any of them (compared without case, percent-encoding and punctuation, so
/// `X-Amz-Signature`, `X%2DAmz%2DCredential`, `private_token`, `db_password`)
/// is hidden. Too much (`monkey=`) is hidden rather than too little.
const SECRET_NAME_PARTS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "pass",
    "token",
    "secret",
    "auth",
    "key",
    "sig",
    "credential",
    "session",
    "cookie",
];

const HIDDEN: &str = "***";

/// `url` with every credential replaced by `***`; anything else unchanged:
/// the password of `user:password@` in any scheme (`git::https://…`,
/// `ssh://…`, and scp-like `user:password@host:path`), a user name alone
/// over http(s) (a token works as one there), and the values of secret query
/// and fragment parameters. A user name without a password elsewhere stays
/// (`git@github.com:…`, `postgres://me@db`): it is no secret.
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
        out.push_str(&params(q));
    }
    if let Some(f) = fragment {
        out.push('#');
        // OAuth's implicit flow puts `access_token=` here.
        out.push_str(&params(f));
    }
    out
}

/// `a=1&b=2` (or `;`-separated) with secret values hidden.
fn params(q: &str) -> String {
    let mut out = String::with_capacity(q.len());
    let mut rest = q;
    loop {
        let end = rest.find(['&', ';']).unwrap_or(rest.len());
        let pair = &rest[..end];
        match pair.split_once('=') {
            Some((name, _)) if is_secret_param(name) => {
                out.push_str(name);
                out.push('=');
                out.push_str(HIDDEN);
            }
            _ => out.push_str(pair),
        }
        if end == rest.len() {
            return out;
        }
        out.push_str(&rest[end..end + 1]);
        rest = &rest[end + 1..];
    }
}

fn is_secret_param(name: &str) -> bool {
    let folded: String = percent_decode(name)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    SECRET_NAME_PARTS.iter().any(|p| folded.contains(p))
}

/// `%XX` escapes decoded (invalid ones kept), so an encoded name is matched.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The authority's `user:password@` with the password hidden (and an http(s)
/// user name alone, which may be a token).
fn userinfo(base: &str) -> String {
    let Some(scheme_end) = base.find("://").map(|i| i + 3) else {
        return scp_like(base);
    };
    let scheme = base[..scheme_end - 3].to_ascii_lowercase();
    let rest = &base[scheme_end..];
    // The last '@' before the query: a password may hold an unencoded '@' or
    // '/'. A path with an '@' may then be hidden too: too much, never too little.
    let Some(at) = rest.rfind('@') else {
        return base.to_string();
    };
    match rest[..at].split_once(':') {
        Some((user, _)) => format!("{}{user}:{HIDDEN}{}", &base[..scheme_end], &rest[at..]),
        None if scheme.ends_with("http") || scheme.ends_with("https") => {
            format!("{}{HIDDEN}{}", &base[..scheme_end], &rest[at..])
        }
        None => base.to_string(),
    }
}

/// git's scp-like form `user:password@host:path` (no scheme): the password
/// hidden; `git@host:path` unchanged.
fn scp_like(base: &str) -> String {
    let Some(at) = base.rfind('@') else {
        return base.to_string();
    };
    match base[..at].split_once(':') {
        Some((user, _)) if !user.contains('/') => format!("{user}:{HIDDEN}{}", &base[at..]),
        _ => base.to_string(),
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

    #[test]
    fn ssh_git_and_scp_like_userinfo_and_encoded_names_are_hidden() {
        assert_eq!(
            url("git::https://user:ghp_secret@github.com/acme/m.git?ref=v1.2.0"),
            "git::https://user:***@github.com/acme/m.git?ref=v1.2.0"
        );
        assert_eq!(
            url("git::ssh://git:s3cret@github.com/acme/m.git"),
            "git::ssh://git:***@github.com/acme/m.git"
        );
        assert_eq!(
            url("deploy:s3cret@github.com:acme/live.git"),
            "deploy:***@github.com:acme/live.git"
        );
        assert_eq!(
            url("https://ghp_tokenasuser@github.com/acme/live"),
            "https://***@github.com/acme/live"
        );
        assert_eq!(
            url("https://h/p?X%2DAmz%2DCredential=AKIA&private_token=t;db_password=p&ref=main"),
            "https://h/p?X%2DAmz%2DCredential=***&private_token=***;db_password=***&ref=main"
        );
        assert_eq!(
            url("https://h/cb#access_token=abc&state=1"),
            "https://h/cb#access_token=***&state=1"
        );
    }

    mod prop {
        use super::super::url;
        use proptest::prelude::*;

        /// Where a credential can sit in a URL, `{s}` standing for it.
        const FORMS: &[&str] = &[
            "https://user:{s}@github.com/acme/live.git",
            "https://{s}@github.com/acme/live.git",
            "git::https://x-access-token:{s}@github.com/a/b.git?ref=v1",
            "ssh://git:{s}@github.com/a/b.git",
            "git::ssh://git:{s}@github.com/a/b.git",
            "deploy:{s}@github.com:a/b.git",
            "postgres://me:{s}@db:5432/x",
            "postgres://me:p@{s}/w@db/x",
            "postgres://db/x?sslmode=require&password={s}",
            "https://h/p?token={s}",
            "https://h/p?a=1&Access_Token={s}#f",
            "https://b.s3.amazonaws.com/k?X-Amz-Credential={s}&X-Amz-Expires=60",
            "https://b.s3.amazonaws.com/k?X-Amz-Signature={s}",
            "https://b.s3.amazonaws.com/k?x-amz-security-token={s}",
            "https://h/p?X%2DAmz%2DSignature={s}",
            "https://h/p;jsessionid=1?private_token={s};x=1",
            "https://h/cb#id_token={s}&state=2",
            "https://h/p?client_secret={s}&page=2",
            "https://h/p?apiKey={s}",
        ];

        proptest! {
            /// No redacted form holds the secret, whatever the secret.
            #[test]
            fn no_redacted_url_contains_the_secret(
                form in 0..FORMS.len(),
                secret in "[A-Za-z0-9_.~+-]{12,40}",
            ) {
                let shown = url(&FORMS[form].replace("{s}", &secret));
                prop_assert!(!shown.contains(&secret), "{} -> {}", FORMS[form], shown);
            }
        }
    }
}
