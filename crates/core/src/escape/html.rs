//! HTML (mails, the vote pages): escaping and which URLs may become links.
//! A tiny function instead of a crate: the five characters below are all that matters in text and quoted attribute
//! values, which is the only way values reach our markup.

/// `s` with `& < > " '` replaced by entities, safe inside element text and
/// inside single- or double-quoted attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Whether `url` may become a link: `https://` or `http://` only, so a value
/// such as `javascript:…` in a payload is shown as text, never made clickable.
pub fn is_web_url(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://"))
        && !url.chars().any(|c| c.is_control() || c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape_html(r#"<a href="x">&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape_html("dev/us-west-2/vpc"), "dev/us-west-2/vpc");
    }

    #[test]
    fn only_web_urls_become_links() {
        assert!(is_web_url(
            "https://console.aws.amazon.com/cloudwatch/home#logs"
        ));
        assert!(is_web_url("http://127.0.0.1:4566/x"));
        assert!(!is_web_url("javascript:alert(1)"));
        assert!(!is_web_url("https://a b"));
        assert!(!is_web_url(""));
    }
}
