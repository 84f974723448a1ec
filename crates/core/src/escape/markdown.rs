//! GitHub-flavoured markdown (pull-request comments). User-controlled text is
//! only ever shown as a code span: GitHub renders its content literally (no
//! links, images, HTML, `@mentions` or `#references`), and the fence is longer
//! than any run of backticks inside, so the text cannot close it. Control
//! characters are made visible first ([`super::text::visible`]), so the text
//! stays on its line and can never start a line of its own (a `/live-ci plan`
//! command in the bot's own comment).

use super::text::visible;

/// `s` as an inline code span, outside tables.
pub fn code(s: &str) -> String {
    let s = visible(s);
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    // A space on each side when the text starts or ends with a backtick or a
    // space (CommonMark strips exactly one from each side of a padded span).
    if s.starts_with(['`', ' ']) || s.ends_with(['`', ' ']) || s.is_empty() {
        format!("{fence} {s} {fence}")
    } else {
        format!("{fence}{s}{fence}")
    }
}

/// `s` as a code span inside a table cell: as [`code`], with `|` escaped (a
/// table splits its rows at every unescaped `|`, even inside code spans;
/// GitHub shows `\|` there as `|`).
pub fn cell(s: &str) -> String {
    code(s).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_cannot_be_closed_or_broken_out_of() {
        assert_eq!(code("dev/vpc"), "`dev/vpc`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("a``b`"), "``` a``b` ```");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code(""), "`  `");
        assert_eq!(code("x\n/live-ci plan\n"), "`x\\u{a}/live-ci plan\\u{a}`");
        assert_eq!(
            code("<img src=x> @team [a](b)"),
            "`<img src=x> @team [a](b)`"
        );
        assert_eq!(cell("a|b`|"), "``a\\|b`\\|``");
        // whatever the input, the result is one line
        for s in ["a\r\nb", "\u{2028}", "|\n|"] {
            assert!(!cell(s).contains(['\n', '\r', '\u{2028}']), "{s:?}");
        }
    }
}
