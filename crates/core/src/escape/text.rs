//! Plain text read by people: mail text parts and subjects, log lines and
//! terminals (`live-ci status`). Control characters (newline, CR, tab, NUL,
//! ESC and so every terminal escape sequence, C1) and the bidirectional-text
//! controls become visible `\u{…}` escapes, so a value is one line that shows
//! what it holds: no forged second line or mail header, no cursor movement or
//! screen clearing, no text shown in another order than it is.

use crate::path::is_unsafe_path_char;

/// `s` as one inert line: every character a repository path may not hold
/// ([`is_unsafe_path_char`]) escaped as `\u{hex}`, and the backslash of such
/// an escape's look-alike left as it is (the escapes only need to be seen).
pub fn visible(s: &str) -> String {
    if !s.chars().any(is_unsafe_path_char) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe_path_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A mail header value (a subject): one line of [`visible`] text; CR and LF
/// can never start another header.
pub fn header(s: &str) -> String {
    visible(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_become_visible_escapes() {
        assert_eq!(visible("dev/us-east-1/vpc"), "dev/us-east-1/vpc");
        assert_eq!(visible("a\nb\r\tc\0"), "a\\u{a}b\\u{d}\\u{9}c\\u{0}");
        assert_eq!(
            visible("\u{1b}[2J\u{1b}]0;x\u{7}"),
            "\\u{1b}[2J\\u{1b}]0;x\\u{7}"
        );
        assert_eq!(visible("abc\u{202E}fdp.exe"), "abc\\u{202e}fdp.exe");
        assert_eq!(visible("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(
            header("deploy x\r\nBcc: eve@example.com"),
            "deploy x\\u{d}\\u{a}Bcc: eve@example.com"
        );
        for s in ["a\nb", "\u{1b}[31m", "x\u{2066}y"] {
            assert!(!visible(s).chars().any(is_unsafe_path_char), "{s:?}");
        }
    }
}
