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
    let mut scan = Scanner {
        b: text.as_bytes(),
        stack: Vec::new(),
        markers: Vec::new(),
        line: 1,
        operators: 0,
        i: 0,
    };
    let refuse = |line: usize, message: String| EngineError::Syntax {
        file: file.clone(),
        line,
        col: 1,
        message,
    };
    while scan.i < scan.b.len() {
        let c = scan.b[scan.i];
        if c == b'\n' {
            scan.line += 1;
        }
        let advanced = match scan.stack.last().copied() {
            Some(Frame::Str) | Some(Frame::Heredoc) => scan.in_string(c),
            _ => scan.at_top(c),
        };
        if advanced {
            continue;
        }
        if scan.depth() > MAX_NESTING {
            return Err(refuse(
                scan.line,
                format!("expressions nested deeper than {MAX_NESTING} levels are refused"),
            ));
        }
        if scan.operators > MAX_OPERATORS {
            return Err(refuse(
                scan.line,
                format!("an attribute with more than {MAX_OPERATORS} operators is refused"),
            ));
        }
        scan.i += 1;
    }
    Ok(())
}

/// The state of [`check_text`]'s pass over the bytes. Its steps return true
/// when they moved `i` themselves (past a comment, an escape or a heredoc's
/// end), so the byte after is not checked against the bounds.
struct Scanner<'t> {
    b: &'t [u8],
    stack: Vec<Frame>,
    /// The open heredocs' end markers.
    markers: Vec<String>,
    line: usize,
    /// Operators in the attribute being read (reset at a top-level newline).
    operators: usize,
    i: usize,
}

impl Scanner<'_> {
    fn next(&self) -> u8 {
        self.b.get(self.i + 1).copied().unwrap_or(0)
    }

    fn depth(&self) -> usize {
        self.stack
            .iter()
            .filter(|f| matches!(f, Frame::Open | Frame::Interp))
            .count()
    }

    /// The end of the current line (the index of its newline, or the end).
    fn line_end(&self, from: usize) -> usize {
        self.b[from..]
            .iter()
            .position(|x| *x == b'\n')
            .map_or(self.b.len(), |p| from + p)
    }

    /// Inside a quoted string or a heredoc: its end, an escape, or an
    /// interpolation (which counts as nesting).
    fn in_string(&mut self, c: u8) -> bool {
        let heredoc = self.stack.last() == Some(&Frame::Heredoc);
        if c == b'\\' && !heredoc {
            self.i += 2;
            return true;
        }
        if c == b'"' && !heredoc {
            self.stack.pop();
        } else if (c == b'$' || c == b'%') && self.next() == b'{' {
            self.stack.push(Frame::Interp);
            self.i += 1;
        } else if c == b'\n' && heredoc {
            let end = self.line_end(self.i + 1);
            let next_line = String::from_utf8_lossy(&self.b[self.i + 1..end]);
            if self.markers.last().is_some_and(|m| next_line.trim() == m) {
                self.stack.pop();
                self.markers.pop();
                self.i = end;
                return true;
            }
        }
        false
    }

    /// Outside strings: comments skipped, strings and heredocs opened,
    /// brackets nested, operators counted.
    fn at_top(&mut self, c: u8) -> bool {
        let next = self.next();
        match c {
            b'"' => self.stack.push(Frame::Str),
            b'#' => {
                self.i = self.line_end(self.i);
                return true;
            }
            b'/' if next == b'/' => {
                self.i = self.line_end(self.i);
                return true;
            }
            b'/' if next == b'*' => {
                let end = self.b[self.i + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(self.b.len(), |p| self.i + 2 + p + 2);
                self.line += self.b[self.i..end].iter().filter(|x| **x == b'\n').count();
                self.i = end;
                return true;
            }
            b'<' if next == b'<' => return self.heredoc_or_operator(),
            b'(' | b'[' | b'{' => self.stack.push(Frame::Open),
            b')' | b']' | b'}' => {
                self.stack.pop();
            }
            b'\n' if self.depth() == 0 => self.operators = 0,
            b'+' | b'-' | b'*' | b'/' | b'%' | b'!' | b'<' | b'>' | b'?' | b'&' | b'|' => {
                self.operators += 1;
            }
            b'=' if next == b'=' => self.operators += 1,
            _ => {}
        }
        false
    }

    /// `<<` opens a heredoc when a marker and a newline follow; otherwise it
    /// is an operator.
    fn heredoc_or_operator(&mut self) -> bool {
        let b = self.b;
        let mut j = self.i + 2;
        if b.get(j) == Some(&b'-') {
            j += 1;
        }
        let start = j;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
            j += 1;
        }
        if j > start && b.get(j) == Some(&b'\n') {
            self.markers
                .push(String::from_utf8_lossy(&b[start..j]).into_owned());
            self.stack.push(Frame::Heredoc);
            // The newline ending the opener is seen by the heredoc frame.
            self.i = j;
            self.line -= 1;
            return true;
        }
        self.operators += 1;
        false
    }
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
