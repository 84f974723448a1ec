//! Chat messages (Slack `mrkdwn`, Teams Adaptive Card `TextBlock` markdown).
//! User-controlled text stays one inert line ([`super::text::visible`]) and
//! carries no markup: in Slack `&`, `<` and `>` are the only characters that
//! build links and mentions (`<!channel>`, `<https://x|y>`), so they become
//! entities as Slack's own docs ask; in an Adaptive Card every markdown
//! punctuation character is backslash-escaped (no link, emphasis or list).

use super::text::visible;

/// `s` for a Slack `mrkdwn` or `plain_text` field.
pub fn slack(s: &str) -> String {
    let s = visible(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // Emphasis and code markers: a value shows as typed, not bold.
            '*' | '_' | '~' | '`' => {
                out.push('\u{200B}');
                out.push(c);
                out.push('\u{200B}');
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` for a Teams Adaptive Card `TextBlock` (markdown subset).
pub fn teams(s: &str) -> String {
    let s = visible(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '*'
                | '_'
                | '['
                | ']'
                | '('
                | ')'
                | '~'
                | '`'
                | '#'
                | '-'
                | '+'
                | '>'
                | '<'
                | '!'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_text_has_no_links_mentions_or_lines() {
        assert_eq!(slack("dev/vpc"), "dev/vpc");
        assert_eq!(
            slack("<!channel> <https://evil|click> a&b"),
            "&lt;!channel&gt; &lt;https://evil|click&gt; a&amp;b"
        );
        assert_eq!(slack("x\n<@U1>"), "x\\u{a}&lt;@U1&gt;");
        assert!(!slack("*bold*").contains("*bold*"));
        for s in ["<", ">", "a\r\nb"] {
            let e = slack(s);
            assert!(!e.contains(['<', '>', '\n', '\r']), "{s:?} -> {e:?}");
        }
    }

    #[test]
    fn teams_text_has_no_markdown() {
        assert_eq!(teams("dev/vpc"), "dev/vpc");
        assert_eq!(teams("[x](https://evil)"), "\\[x\\]\\(https://evil\\)");
        assert_eq!(teams("**b** _i_"), "\\*\\*b\\*\\* \\_i\\_");
        assert_eq!(teams("a\n- b"), "a\\\\u{a}\\- b");
    }
}
