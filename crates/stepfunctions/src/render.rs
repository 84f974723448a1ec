//! `${name}` substitution: the subset of Terraform's `templatefile` that the ASL
//! template uses, so Terraform and Rust render the same file identically.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{Result, WorkflowError};

/// Substitutes every `${name}` in `template` with `vars[name]`, verbatim.
///
/// Errors name every missing and every unused variable, and reject template
/// syntax that Terraform would interpret but this renderer does not (`%{`
/// directives, `$${` escapes, expressions inside `${…}`), so the template cannot
/// silently render differently in the two places.
pub fn render(template: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    let names = placeholders(template)?;
    let missing: Vec<String> = names
        .iter()
        .filter(|n| !vars.contains_key(*n))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(WorkflowError::MissingVariables(missing));
    }
    let unknown: Vec<String> = vars
        .keys()
        .filter(|k| !names.contains(*k))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(WorkflowError::UnknownVariables(unknown));
    }
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        // placeholders() has already checked every `${` is closed by a name.
        let end = after.find('}').unwrap_or(after.len());
        let name = &after[..end];
        if let Some(value) = vars.get(name) {
            out.push_str(value);
        }
        rest = &after[(end + 1).min(after.len())..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The names of the `${name}` placeholders in `template`.
pub fn placeholders(template: &str) -> Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    let bytes = template.as_bytes();
    let mut i = 0;
    while i + 1 < bytes.len() {
        let pair = (bytes[i], bytes[i + 1]);
        if pair == (b'%', b'{') {
            return Err(unsupported(
                template,
                i,
                "template directives are not supported",
            ));
        }
        if pair != (b'$', b'{') {
            i += 1;
            continue;
        }
        if i > 0 && bytes[i - 1] == b'$' {
            return Err(unsupported(template, i - 1, "escapes are not supported"));
        }
        let start = i + 2;
        let Some(len) = template[start..].find('}') else {
            return Err(unsupported(template, i, "unclosed placeholder"));
        };
        let name = &template[start..start + len];
        if !is_identifier(name) {
            return Err(unsupported(
                template,
                i,
                "only ${name} placeholders are supported",
            ));
        }
        names.insert(name.to_owned());
        i = start + len + 1;
    }
    Ok(names)
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn unsupported(template: &str, at: usize, reason: &'static str) -> WorkflowError {
    let line = template[..at].matches('\n').count() + 1;
    let snippet: String = template[at..].chars().take(24).collect();
    let snippet = snippet.lines().next().unwrap_or_default().to_owned();
    WorkflowError::UnsupportedSyntax {
        line,
        snippet,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn substitutes_every_occurrence_verbatim() {
        let out = render(
            r#"{"a": "${x}", "b": ${n}, "c": "${x}", "jsonpath": "$.a", "ctx": "$$.Task.Token"}"#,
            &vars(&[("x", "v"), ("n", "[1, 2]")]),
        )
        .unwrap();
        assert_eq!(
            out,
            r#"{"a": "v", "b": [1, 2], "c": "v", "jsonpath": "$.a", "ctx": "$$.Task.Token"}"#
        );
    }

    #[test]
    fn names_every_missing_variable() {
        let err = render("${a} ${b} ${c}", &vars(&[("b", "1")])).unwrap_err();
        assert!(
            matches!(&err, WorkflowError::MissingVariables(names) if names == &["a", "c"]),
            "{err:?}"
        );
        assert_eq!(err.to_string(), r#"template variables not given: "a", "c""#);
    }

    #[test]
    fn names_every_unused_variable() {
        let err = render("${a}", &vars(&[("a", "1"), ("typo", "2")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"variables not used by the template: "typo""#
        );
    }

    #[test]
    fn rejects_syntax_terraform_reads_differently() {
        for (template, line, reason) in [
            ("x\n%{ if a }", 2, "template directives are not supported"),
            ("$${a}", 1, "escapes are not supported"),
            ("${a.b}", 1, "only ${name} placeholders are supported"),
            ("${ a }", 1, "only ${name} placeholders are supported"),
            ("${}", 1, "only ${name} placeholders are supported"),
            ("${a", 1, "unclosed placeholder"),
        ] {
            match render(template, &vars(&[("a", "1")])) {
                Err(WorkflowError::UnsupportedSyntax {
                    line: l, reason: r, ..
                }) => {
                    assert_eq!((l, r), (line, reason), "{template}");
                }
                other => panic!("{template}: {other:?}"),
            }
        }
    }

    #[test]
    fn values_are_not_rescanned() {
        let out = render("${a}", &vars(&[("a", "${b}")])).unwrap();
        assert_eq!(out, "${b}");
    }
}
