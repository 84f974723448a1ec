//! A hostile `terragrunt.hcl` (issue 27 item 6 f): deeply nested expressions,
//! locals doubling a string or a list, `for` products and include chains fail
//! fast with an error naming the file and line, and the other units are still
//! discovered.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use live_ci_core::MemTree;
use live_ci_terragrunt::{Discovery, discover};
use proptest::prelude::*;

/// Discovery of a repository with one ordinary unit and `hostile` at
/// `evil/terragrunt.hcl` (plus `extra` files), and how long it took.
fn discover_with(hostile: &str, extra: &[(String, String)]) -> (Discovery, Duration) {
    let mut t = MemTree::new();
    t.insert("ok/terragrunt.hcl", "inputs = { a = 1 }\n")
        .unwrap();
    t.insert("evil/terragrunt.hcl", hostile).unwrap();
    for (p, c) in extra {
        t.insert(p, c).unwrap();
    }
    let start = Instant::now();
    let d = discover(&t);
    (d, start.elapsed())
}

fn errors(d: &Discovery) -> String {
    let mut all: Vec<String> = d.errors.iter().map(ToString::to_string).collect();
    for es in d.unit_errors.values() {
        all.extend(es.iter().map(ToString::to_string));
    }
    all.join("\n")
}

/// `n` locals, each twice the one before: 2^n bytes unbounded.
fn doubling(n: usize, step: impl Fn(&str) -> String) -> String {
    let mut text = String::from("locals {\n  l0 = \"xxxxxxxxxxxxxxxx\"\n");
    for i in 1..=n {
        text.push_str(&format!(
            "  l{i} = {}\n",
            step(&format!("local.l{}", i - 1))
        ));
    }
    text.push_str("}\ninputs = { v = local.l");
    text.push_str(&n.to_string());
    text.push_str(" }\n");
    text
}

fn assert_refused(d: &Discovery, took: Duration, needle: &str) {
    let errs = errors(d);
    assert!(errs.contains(needle), "expected {needle:?} in {errs}");
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert!(
        d.units.iter().any(|u| u.path.as_str() == "ok"),
        "the other unit is still discovered"
    );
}

#[test]
fn a_string_doubled_by_locals_is_refused_at_its_line() {
    let text = doubling(64, |prev| format!("\"${{{prev}}}${{{prev}}}\""));
    let (d, took) = discover_with(&text, &[]);
    // l0 has 16 bytes; l19 (2^22 * 2 bytes) is the first past 4 MiB, on line 21.
    assert_refused(
        &d,
        took,
        "evil/terragrunt.hcl:21: locals.l19: a value larger than 4194304 bytes is refused",
    );
}

#[test]
fn lists_doubled_by_concat_format_join_and_for_are_refused() {
    for (name, step) in [
        (
            "concat",
            Box::new(|p: &str| format!("concat([{p}], [{p}])")) as Box<dyn Fn(&str) -> String>,
        ),
        (
            "format",
            Box::new(|p: &str| format!("format(\"%s%s\", {p}, {p})")),
        ),
        (
            "join",
            Box::new(|p: &str| format!("join(\"\", [{p}, {p}])")),
        ),
        (
            "replace",
            Box::new(|p: &str| format!("replace({p}, \"x\", \"xx\")")),
        ),
        (
            "for",
            Box::new(|p: &str| format!("[for a in [1, 2] : {p}]")),
        ),
        (
            "object",
            Box::new(|p: &str| format!("{{ a = {p}, b = {p} }}")),
        ),
    ] {
        let text = doubling(64, step);
        let (d, took) = discover_with(&text, &[]);
        assert_refused(&d, took, "is refused");
        let errs = errors(&d);
        assert!(errs.contains("evil/terragrunt.hcl:"), "{name}: {errs}");
    }
}

#[test]
fn a_value_copied_without_end_exhausts_the_files_budget() {
    // 3 MiB, under the value bound, referenced 100 times.
    let mut text = String::from("locals {\n  big = \"");
    text.push_str(&"y".repeat(3 << 20));
    text.push_str("\"\n");
    for i in 0..100 {
        text.push_str(&format!("  c{i} = [local.big]\n"));
    }
    text.push_str("}\n");
    let (d, took) = discover_with(&text, &[]);
    assert_refused(&d, took, "produce more than 67108864 bytes together");
}

#[test]
fn an_include_chain_longer_than_the_bound_is_refused() {
    let extra: Vec<(String, String)> = (0..200)
        .map(|i| {
            (
                format!("chain/c{i}.hcl"),
                format!(
                    "locals {{\n  v = read_terragrunt_config(\"../chain/c{}.hcl\")\n}}\n",
                    i + 1
                ),
            )
        })
        .collect();
    let text = "locals {\n  v = read_terragrunt_config(\"../chain/c0.hcl\")\n}\n";
    let (d, took) = discover_with(text, &extra);
    assert_refused(&d, took, "in a chain; at most 32 are");
}

#[test]
fn deep_nesting_is_a_syntax_error_not_a_stack_overflow() {
    let text = format!(
        "locals {{\n  x = {}1{}\n}}\n",
        "[".repeat(50_000),
        "]".repeat(50_000)
    );
    let (d, took) = discover_with(&text, &[]);
    assert_refused(
        &d,
        took,
        "evil/terragrunt.hcl:2:1: syntax error: expressions nested deeper than 64 levels are refused",
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    /// Any nesting of brackets past the bound, in any mix, is refused rather
    /// than parsed.
    #[test]
    fn any_deep_mix_of_brackets_is_refused(kinds in prop::collection::vec(0..4usize, 65..400)) {
        let mut open = String::new();
        let mut close = String::new();
        for k in &kinds {
            let (o, c) = [("(", ")"), ("[", "]"), ("{a=", "}"), ("\"${", "}\"")][*k];
            open.push_str(o);
            close.insert_str(0, c);
        }
        let text = format!("x = {open}1{close}\n");
        let (d, _) = discover_with(&text, &[]);
        prop_assert!(errors(&d).contains("nested deeper than 64"), "{}", errors(&d));
    }
}
