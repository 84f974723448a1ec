//! The one SQL dialect both adapters run: named parameters (`:name`) as the RDS
//! Data API takes them, rewritten to `$n` for tokio-postgres, and migrations split
//! into single statements because the Data API runs one statement per call.

use std::collections::HashMap;

/// A statement with `:name` parameters rewritten to `$1`, `$2`… (a name used
/// twice gets one number), and the names in number order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Positional {
    /// The statement with `$n` placeholders.
    pub sql: String,
    /// The parameter names; `names[n - 1]` is `$n`'s.
    pub names: Vec<String>,
}

/// Rewrites named parameters. Casts (`::jsonb`), string literals, quoted
/// identifiers, dollar-quoted bodies and comments are copied unchanged.
pub fn to_positional(sql: &str) -> Positional {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut names: Vec<String> = Vec::new();
    let mut numbers: HashMap<String, usize> = HashMap::new();
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if let Some(end) = skip_quoted(sql, i) {
            out.push_str(&sql[i..end]);
            i = end;
            continue;
        }
        let c = b[i];
        if c == b':' {
            if b.get(i + 1) == Some(&b':') {
                out.push_str("::");
                i += 2;
                continue;
            }
            let start = i + 1;
            let mut end = start;
            while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
                end += 1;
            }
            if end > start && !b[start].is_ascii_digit() {
                let name = &sql[start..end];
                let n = *numbers.entry(name.to_string()).or_insert_with(|| {
                    names.push(name.to_string());
                    names.len()
                });
                out.push('$');
                out.push_str(&n.to_string());
                i = end;
                continue;
            }
        }
        // Copy one whole character (the SQL may hold non-ASCII text).
        let len = sql[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&sql[i..i + len]);
        i += len;
    }
    Positional { sql: out, names }
}

/// The named parameters a statement uses, in order of first use.
pub fn parameter_names(sql: &str) -> Vec<String> {
    to_positional(sql).names
}

/// Splits a script into statements at top-level semicolons; empty statements
/// and comment-only pieces are dropped.
pub fn split_statements(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = script.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        if let Some(end) = skip_quoted(script, i) {
            i = end;
            continue;
        }
        if b[i] == b';' {
            push_statement(&mut out, &script[start..i]);
            start = i + 1;
        }
        i += 1;
    }
    push_statement(&mut out, &script[start..]);
    out
}

fn push_statement(out: &mut Vec<String>, piece: &str) {
    let has_code = {
        let mut i = 0;
        let mut code = false;
        while i < piece.len() {
            if let Some(end) = skip_quoted(piece, i) {
                if !piece[i..].starts_with("--") && !piece[i..].starts_with("/*") {
                    code = true;
                }
                i = end;
                continue;
            }
            if !piece.as_bytes()[i].is_ascii_whitespace() {
                code = true;
            }
            i += 1;
        }
        code
    };
    if has_code {
        out.push(piece.trim().to_string());
    }
}

/// If a literal, quoted identifier, dollar-quoted string or comment starts at
/// byte `i`, the byte just past its end.
fn skip_quoted(sql: &str, i: usize) -> Option<usize> {
    let b = sql.as_bytes();
    let rest = &sql[i..];
    match b[i] {
        b'\'' | b'"' => {
            let q = b[i];
            let mut j = i + 1;
            while j < b.len() {
                if b[j] == q {
                    // A doubled quote is an escaped quote inside the literal.
                    if b.get(j + 1) == Some(&q) {
                        j += 2;
                        continue;
                    }
                    return Some(j + 1);
                }
                j += 1;
            }
            Some(b.len())
        }
        b'-' if rest.starts_with("--") => Some(rest.find('\n').map_or(b.len(), |n| i + n + 1)),
        b'/' if rest.starts_with("/*") => Some(rest.find("*/").map_or(b.len(), |n| i + n + 2)),
        b'$' => {
            // `$tag$ … $tag$`; `$1` is a positional parameter, not a quote.
            let close = rest[1..].find('$')? + 1;
            let tag = &rest[..=close];
            if !tag[1..tag.len() - 1]
                .bytes()
                .all(|c| c.is_ascii_alphabetic() || c == b'_')
            {
                return None;
            }
            let body = &rest[tag.len()..];
            Some(
                body.find(tag)
                    .map_or(b.len(), |n| i + tag.len() + n + tag.len()),
            )
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_to_positional() {
        let p = to_positional(
            "SELECT :a::jsonb, ':not' AS \"x:y\", :b -- :c\n, :a, $$ :d $$, x::text /* :e */",
        );
        assert_eq!(
            p.sql,
            "SELECT $1::jsonb, ':not' AS \"x:y\", $2 -- :c\n, $1, $$ :d $$, x::text /* :e */"
        );
        assert_eq!(p.names, ["a", "b"]);
        assert_eq!(
            to_positional("a = :x_1 AND b = 'it''s :y'").sql,
            "a = $1 AND b = 'it''s :y'"
        );
        // A colon followed by a digit, or alone, is left alone.
        assert_eq!(
            to_positional("SELECT arr[1:2], :").sql,
            "SELECT arr[1:2], :"
        );
        assert_eq!(to_positional("SELECT 'é', :x").sql, "SELECT 'é', $1");
    }

    #[test]
    fn splits_scripts() {
        let s = split_statements(
            "-- header; with a semicolon\nCREATE TABLE a (x text DEFAULT ';');\n\
             CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$;\n\
             /* trailing; */\n",
        );
        assert_eq!(
            s,
            [
                "-- header; with a semicolon\nCREATE TABLE a (x text DEFAULT ';')",
                "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$"
            ]
        );
        let s = split_statements("SELECT $body$ ; $body$; SELECT 2");
        assert_eq!(s, ["SELECT $body$ ; $body$", "SELECT 2"]);
    }
}
