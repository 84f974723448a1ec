//! Bounds on evaluating a repository's HCL: discovery parses and evaluates
//! files a pull request's author wrote, in the task and in the receiver, so a
//! hostile `terragrunt.hcl` must fail fast with an error naming its file and
//! line instead of overflowing the stack (a deeply nested expression aborts
//! the whole process, not just the unit) or growing values exponentially
//! (`b = "${a}${a}"`, `c = "${b}${b}"`, … doubles with every local).

use super::value::V;
use crate::error::EngineError;
use live_ci_core::path::RepoPath;

/// Brackets, braces, parentheses and interpolations open at once. The parser
/// recurses per level (about 1,000 levels overflow an 8 MiB stack); real
/// configurations stay under 20.
pub(crate) const MAX_NESTING: usize = 64;

/// Operators in one attribute (`a + a + …`): the parser recurses per operator
/// too (10,000 overflow). Real attributes have a handful.
pub(crate) const MAX_OPERATORS: usize = 512;

/// The largest value one expression may produce: string bytes plus one per
/// list element or object entry.
pub(crate) const MAX_VALUE: usize = 4 << 20;

/// What all expressions of one file may produce together (each result counted
/// at its size), so a value just under [`MAX_VALUE`] cannot be copied without end.
pub(crate) const MAX_WORK: usize = 64 << 20;

/// Files included or read through each other at once (`include` and
/// `read_terragrunt_config` chains): each level is a native recursion.
pub(crate) const MAX_CHAIN: usize = 32;

#[derive(Clone, Copy, PartialEq)]
enum Frame {
    Open,
    Interp,
    Str,
    Heredoc,
}

/// Refuses text nested deeper than [`MAX_NESTING`] or with an attribute of
/// more than [`MAX_OPERATORS`] operators, naming the file and line, before
/// the parser sees it. A light lexer: strings, heredocs and comments are
/// skipped, interpolations inside them count as nesting.
pub(crate) fn check_text(file: &RepoPath, text: &str) -> Result<(), EngineError> {
    let b = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut markers: Vec<String> = Vec::new();
    let mut line = 1usize;
    let mut operators = 0usize;
    let mut i = 0usize;
    let refuse = |line: usize, message: String| EngineError::Syntax {
        file: file.clone(),
        line,
        col: 1,
        message,
    };
    let depth = |stack: &[Frame]| {
        stack
            .iter()
            .filter(|f| matches!(f, Frame::Open | Frame::Interp))
            .count()
    };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied().unwrap_or(0);
        if c == b'\n' {
            line += 1;
        }
        match stack.last().copied() {
            Some(Frame::Str) | Some(Frame::Heredoc) => {
                let heredoc = stack.last() == Some(&Frame::Heredoc);
                if c == b'\\' && !heredoc {
                    i += 2;
                    continue;
                }
                if c == b'"' && !heredoc {
                    stack.pop();
                } else if (c == b'$' || c == b'%') && next == b'{' {
                    stack.push(Frame::Interp);
                    i += 1;
                } else if c == b'\n' && heredoc {
                    let end = b[i + 1..]
                        .iter()
                        .position(|x| *x == b'\n')
                        .map_or(b.len(), |p| i + 1 + p);
                    let next_line = String::from_utf8_lossy(&b[i + 1..end]);
                    if markers.last().is_some_and(|m| next_line.trim() == m) {
                        stack.pop();
                        markers.pop();
                        i = end;
                        continue;
                    }
                }
            }
            _ => match c {
                b'"' => stack.push(Frame::Str),
                b'#' => {
                    i = b[i..]
                        .iter()
                        .position(|x| *x == b'\n')
                        .map_or(b.len(), |p| i + p);
                    continue;
                }
                b'/' if next == b'/' => {
                    i = b[i..]
                        .iter()
                        .position(|x| *x == b'\n')
                        .map_or(b.len(), |p| i + p);
                    continue;
                }
                b'/' if next == b'*' => {
                    let end = text[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
                    line += b[i..end].iter().filter(|x| **x == b'\n').count();
                    i = end;
                    continue;
                }
                b'<' if next == b'<' => {
                    let mut j = i + 2;
                    if b.get(j) == Some(&b'-') {
                        j += 1;
                    }
                    let start = j;
                    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                        j += 1;
                    }
                    if j > start && b.get(j) == Some(&b'\n') {
                        markers.push(String::from_utf8_lossy(&b[start..j]).into_owned());
                        stack.push(Frame::Heredoc);
                        // The newline ending the opener is seen by the heredoc frame.
                        i = j;
                        line -= 1;
                        continue;
                    }
                    operators += 1;
                }
                b'(' | b'[' | b'{' => stack.push(Frame::Open),
                b')' | b']' | b'}' => {
                    stack.pop();
                }
                b'\n' if depth(&stack) == 0 => operators = 0,
                b'+' | b'-' | b'*' | b'/' | b'%' | b'!' | b'<' | b'>' | b'?' | b'&' | b'|' => {
                    operators += 1;
                }
                b'=' if next == b'=' => operators += 1,
                _ => {}
            },
        }
        if depth(&stack) > MAX_NESTING {
            return Err(refuse(
                line,
                format!("expressions nested deeper than {MAX_NESTING} levels are refused"),
            ));
        }
        if operators > MAX_OPERATORS {
            return Err(refuse(
                line,
                format!("an attribute with more than {MAX_OPERATORS} operators is refused"),
            ));
        }
        i += 1;
    }
    Ok(())
}

/// The size of `v` as [`MAX_VALUE`] counts it, stopping once past `limit`.
pub(crate) fn weight(v: &V, limit: usize) -> usize {
    fn go(v: &V, total: &mut usize, limit: usize) {
        if *total > limit {
            return;
        }
        match v {
            V::String(s) => *total += s.len(),
            V::List(items) => {
                *total += items.len();
                for item in items {
                    go(item, total, limit);
                }
            }
            V::Object(map) => {
                *total += map.len();
                for (k, item) in map {
                    *total += k.len();
                    go(item, total, limit);
                }
            }
            _ => *total += 1,
        }
    }
    let mut total = 0;
    go(v, &mut total, limit);
    total
}

/// The line of `text` where the attribute named by the last segment of
/// `field` (`locals.big` → `big = …`) is set, if it can be found.
pub(crate) fn line_of(text: &str, field: &str) -> Option<usize> {
    let name = field.rsplit('.').next().filter(|n| !n.is_empty())?;
    text.lines()
        .position(|l| {
            l.trim_start().strip_prefix(name).is_some_and(|rest| {
                rest.trim_start().starts_with('=') && !rest.trim_start().starts_with("==")
            })
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn check(text: &str) -> Result<(), EngineError> {
        check_text(&RepoPath::new("dev/app/terragrunt.hcl").unwrap(), text)
    }

    #[test]
    fn ordinary_configurations_pass() {
        let text = r#"
# a comment with ((((( and "
include "root" { path = find_in_parent_folders() }
locals {
  env  = "dev-${lower("X")}-((("   // trailing ((( [[[
  tags = { a = [1, 2, (3 + 4) * 5], b = !true }
  doc  = <<-EOT
    text with ((( and "quotes" and ${local.env}
  EOT
}
/* block ((((
comment */
inputs = merge(local.tags, { name = "a-b-c-d-e-f" })
"#;
        check(text).unwrap();
    }

    #[test]
    fn deep_nesting_and_long_operator_chains_are_refused_with_their_line() {
        let deep = format!(
            "locals {{\n  x = {}1{}\n}}\n",
            "(".repeat(100_000),
            ")".repeat(100_000)
        );
        let err = check(&deep).unwrap_err().to_string();
        assert!(err.starts_with("dev/app/terragrunt.hcl:2:"), "{err}");
        assert!(err.contains("nested deeper than 64"), "{err}");
        let interp = format!(
            "x = {}\n",
            (0..200).fold("1".to_string(), |a, _| format!("\"${{{a}}}\""))
        );
        let err = check(&interp).unwrap_err().to_string();
        assert!(err.contains("nested deeper"), "{err}");
        let chain = format!("a = 1\nb = 1{}\n", " + 1".repeat(100_000));
        let err = check(&chain).unwrap_err().to_string();
        assert!(err.starts_with("dev/app/terragrunt.hcl:2:"), "{err}");
        assert!(err.contains("more than 512 operators"), "{err}");
        let nots = format!("a = {}true\n", "!".repeat(100_000));
        assert!(check(&nots).is_err());
    }
}
