//! Cross-module tests: selection construct by construct, parse-error columns,
//! the filters file, and properties over generated queries and graphs.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::num::NonZeroUsize;

use proptest::prelude::*;

use super::*;
use crate::error::EngineError;
use crate::graph::Graph;
use crate::unit::Unit;
use live_ci_core::path::RepoPath;

fn unit(path: &str, deps: &[&str], reads: &[&str]) -> Unit {
    let mut u = Unit::new(RepoPath::new(path).unwrap());
    u.dependencies = deps.iter().map(|d| RepoPath::new(d).unwrap()).collect();
    u.reads = reads.iter().map(|r| RepoPath::new(r).unwrap()).collect();
    u
}

/// ```text
/// net/vpc <- prod/db    <- prod/app <- prod/web
///         <- prod/cache <-/
///         <- dev/app, dev/db
/// net/dns
/// ```
fn sample() -> Graph {
    let (g, errs) = Graph::build(vec![
        unit("net/vpc", &[], &[]),
        unit("net/dns", &[], &[]),
        unit("prod/db", &["net/vpc"], &[]),
        unit("prod/cache", &["net/vpc"], &[]),
        unit("prod/app", &["prod/db", "prod/cache"], &["common/app.hcl"]),
        unit("prod/web", &["prod/app"], &[]),
        unit("dev/app", &["net/vpc"], &["common/app.hcl", "dev/env.hcl"]),
        unit("dev/db", &["net/vpc"], &[]),
    ]);
    assert!(errs.is_empty(), "{errs:?}");
    g
}

/// Answers `[main]` and `[main...feature]`, counting how often it is asked.
#[derive(Default)]
struct FakeGit {
    calls: RefCell<Vec<(String, Option<String>)>>,
}

impl GitRanges for FakeGit {
    fn changed(&self, base: &str, head: Option<&str>) -> crate::error::Result<RangeChanges> {
        self.calls
            .borrow_mut()
            .push((base.to_string(), head.map(str::to_string)));
        let (paths, removed): (&[&str], &[&str]) = match (base, head) {
            // `gone/unit` was removed: not in the graph, listed apart.
            ("main", None) => (&["prod/db"], &["gone/unit"]),
            ("main", Some("feature")) => (&["net/dns"], &[]),
            _ => {
                return Err(
                    live_ci_core::CoreError::Vcs(format!("unknown revision {base:?}")).into(),
                );
            }
        };
        let set = |ps: &[&str]| ps.iter().map(|p| RepoPath::new(p).unwrap()).collect();
        Ok(RangeChanges {
            changed: set(paths),
            removed: set(removed),
            stacks: BTreeSet::new(),
        })
    }
}

fn select_with(g: &Graph, queries: &[&str], git: Option<&dyn GitRanges>) -> Vec<String> {
    let filters = Filters::parse(queries.iter().copied()).unwrap();
    filters
        .select(g, git)
        .unwrap()
        .into_iter()
        .map(|i| g.path(i).to_string())
        .collect()
}

fn select(queries: &[&str]) -> Vec<String> {
    select_with(&sample(), queries, None)
}

/// Sorted like the graph (by path), so expectations can be written in any order.
fn set(paths: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
    v.sort();
    v
}

#[test]
fn names_match_directory_names_with_globs() {
    assert_eq!(select(&["app"]), set(&["dev/app", "prod/app"]));
    assert_eq!(select(&["name=app"]), select(&["app"]));
    assert_eq!(select(&["a*"]), set(&["dev/app", "prod/app"]));
    assert_eq!(select(&["?b"]), set(&["dev/db", "prod/db"]));
    assert_eq!(
        select(&["prod"]),
        set(&[]),
        "a directory that is not a unit"
    );
}

#[test]
fn paths_are_repo_relative_globs() {
    assert_eq!(
        select(&["./prod/*"]),
        set(&["prod/app", "prod/cache", "prod/db", "prod/web"])
    );
    assert_eq!(select(&["/prod/*"]), select(&["./prod/*"]));
    assert_eq!(select(&["{prod/*}"]), select(&["./prod/*"]));
    assert_eq!(select(&["./prod/db"]), set(&["prod/db"]));
    assert_eq!(select(&["./*"]), set(&[]), "* does not cross /");
    assert_eq!(select(&["./*/db"]), set(&["dev/db", "prod/db"]));
    assert_eq!(select(&["./**/app"]), set(&["dev/app", "prod/app"]));
    assert_eq!(select(&["./net/../dev/./db/"]), set(&["dev/db"]));
}

#[test]
fn attributes() {
    assert_eq!(select(&["type=unit"]).len(), 8);
    assert_eq!(select(&["type=stack"]), set(&[]));
    assert_eq!(
        select(&["reading=common/app.hcl"]),
        set(&["dev/app", "prod/app"])
    );
    assert_eq!(select(&["reading=./dev/*.hcl"]), set(&["dev/app"]));
    assert_eq!(select(&["reading=*.hcl"]), set(&[]), "* does not cross /");
}

#[test]
fn negation_intersection_and_union() {
    assert_eq!(
        select(&["!./prod/**"]),
        set(&["dev/app", "dev/db", "net/dns", "net/vpc"])
    );
    assert_eq!(
        select(&["./prod/** | !app"]),
        set(&["prod/cache", "prod/db", "prod/web"])
    );
    assert_eq!(
        select(&["!app | ./prod/**"]),
        select(&["./prod/** | !app"]),
        "! binds tighter than |"
    );
    assert_eq!(select(&["db | ./dev/*"]), set(&["dev/db"]));
    assert_eq!(
        select(&["vpc", "app"]),
        set(&["dev/app", "net/vpc", "prod/app"])
    );
    // Negative filters apply after the union of the positive ones.
    assert_eq!(
        select(&["!db", "./prod/*"]),
        set(&["prod/app", "prod/cache", "prod/web"])
    );
    // Only negative filters: start from everything.
    assert_eq!(
        select(&["!app", "!./net/*"]),
        set(&["dev/db", "prod/cache", "prod/db", "prod/web"])
    );
    assert_eq!(select(&["!!vpc"]), set(&["net/vpc"]));
    assert_eq!(select(&[]).len(), 8, "no filters select everything");
}

#[test]
fn graph_operators() {
    assert_eq!(
        select(&["./prod/app..."]),
        set(&["net/vpc", "prod/app", "prod/cache", "prod/db"])
    );
    assert_eq!(
        select(&["./prod/app...1"]),
        set(&["prod/app", "prod/cache", "prod/db"])
    );
    assert_eq!(
        select(&["...vpc"]),
        set(&[
            "dev/app",
            "dev/db",
            "net/vpc",
            "prod/app",
            "prod/cache",
            "prod/db",
            "prod/web"
        ])
    );
    assert_eq!(
        select(&["1...vpc"]),
        set(&["dev/app", "dev/db", "net/vpc", "prod/cache", "prod/db"])
    );
    assert_eq!(
        select(&["2...{./prod/db}"]),
        set(&["prod/app", "prod/db", "prod/web"])
    );
    assert_eq!(
        select(&["...^vpc"]),
        set(&[
            "dev/app",
            "dev/db",
            "prod/app",
            "prod/cache",
            "prod/db",
            "prod/web"
        ])
    );
    assert_eq!(
        select(&["^./prod/app..."]),
        set(&["net/vpc", "prod/cache", "prod/db"])
    );
    assert_eq!(
        select(&["...db..."]),
        set(&["dev/db", "net/vpc", "prod/app", "prod/db", "prod/web"])
    );
    assert_eq!(
        select(&["1...^./prod/db...1"]),
        set(&["net/vpc", "prod/app"])
    );
    // `^` drops every target unit, even one reached from another target.
    assert_eq!(select(&["^./prod/*..."]), set(&["net/vpc"]));
    // A unit named by digits is a name unless a target follows the `...`.
    let (g, _) = Graph::build(vec![unit("1", &["2"], &[]), unit("2", &[], &[])]);
    assert_eq!(select_with(&g, &["1..."], None), set(&["1", "2"]));
    assert_eq!(select_with(&g, &["1...2"], None), set(&["1", "2"]));
    assert_eq!(select_with(&g, &["1...^2"], None), set(&["1"]));
    assert_eq!(select_with(&g, &["name=1...1"], None), set(&["1", "2"]));
}

#[test]
fn git_ranges() {
    let g = sample();
    let git = FakeGit::default();
    assert_eq!(select_with(&g, &["[main]"], Some(&git)), set(&["prod/db"]));
    assert_eq!(
        select_with(&g, &["[main...feature]"], Some(&git)),
        set(&["net/dns"])
    );
    assert_eq!(
        select_with(&g, &["...[main]", "[main] | !db"], Some(&git)),
        set(&["prod/app", "prod/db", "prod/web"])
    );
    assert_eq!(
        git.calls.borrow().as_slice(),
        [
            ("main".to_string(), None),
            ("main".to_string(), Some("feature".to_string())),
            ("main".to_string(), None),
        ],
        "one question per distinct range per select"
    );
    let err = Filters::parse(["[nope]"])
        .unwrap()
        .select(&g, Some(&git))
        .unwrap_err();
    assert_eq!(
        err,
        EngineError::Core(live_ci_core::CoreError::Vcs(
            "unknown revision \"nope\"".into()
        ))
    );
}

#[test]
fn git_ranges_without_git_are_an_error() {
    let filters = Filters::parse(["app", "...[origin/main]"]).unwrap();
    assert!(filters.needs_git());
    assert!(!Filters::parse(["app", "!{[x]}"]).unwrap().needs_git());
    let err = filters.select(&sample(), None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "filter \"...[origin/main]\" selects units changed in git ([origin/main]), \
         but no git repository is available"
    );
}

#[test]
fn display_is_canonical() {
    let cases = [
        ("name=foo", "foo"),
        ("  foo   bar ", "foo   bar"),
        ("/a/./b/", "./a/b"),
        ("{a b}", "./a b"),
        ("{a|b}...", "{./a|b}..."),
        ("{./}", "./"),
        ("[main ... HEAD^1]", "[main...HEAD^1]"),
        ("007...x...2", "7...x...2"),
        ("name=1...", "name=1..."),
        ("1...", "name=1..."),
        ("!  a|b|^c...", "!a | b | ^c..."),
        ("a. ...", "a. ..."),
        ("reading=./x/y.hcl", "reading=x/y.hcl"),
        ("type = unit", "type=unit"),
    ];
    for (input, canonical) in cases {
        let q = parse_query(input).unwrap();
        assert_eq!(q.to_string(), canonical, "{input:?}");
        assert_eq!(parse_query(canonical).unwrap(), q, "{input:?}");
    }
}

#[test]
fn parse_errors_name_the_column_and_what_was_expected() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "foo..|",
            7,
            "expected a name, path or [git range] after \"|\"",
        ),
        (
            "",
            1,
            "expected a name, path or [git range], found an empty filter",
        ),
        (
            "|foo",
            1,
            "expected a name, path or [git range], found \"|\"",
        ),
        ("!", 2, "expected a name, path or [git range] after \"!\""),
        (
            "......x",
            4,
            "expected a name, path or [git range] after \"...\", found \"...\"",
        ),
        (
            "[main]foo",
            7,
            "expected \"|\" or the end of the filter, found \"foo\" (combine expressions with \"|\")",
        ),
        (
            "a...b",
            5,
            "expected \"|\" or the end of the filter, found \"b\" (combine expressions with \"|\")",
        ),
        (
            "a}",
            2,
            "expected \"|\" or the end of the filter, found \"}\" (combine expressions with \"|\")",
        ),
        (
            "foo=bar",
            1,
            "unknown attribute \"foo\" (expected name, type or reading)",
        ),
        (
            "type=thing",
            6,
            "unknown type \"thing\" (expected unit or stack)",
        ),
        ("name=", 6, "expected a value after \"=\""),
        ("name=|", 6, "expected a value after \"=\", found \"|\""),
        ("reading=./", 9, "expected a file after \"reading=\""),
        (
            "[main",
            6,
            "expected \"]\" to close the git range opened at column 1",
        ),
        (
            "x | [a...b...c]",
            11,
            "expected \"]\" to close the git range opened at column 5, found \"...\"",
        ),
        ("[]", 2, "expected a git reference after \"[\", found \"]\""),
        (
            "[a...]",
            6,
            "expected a git reference after \"...\", found \"]\"",
        ),
        ("[ -x]", 3, "git reference \"-x\" cannot start with \"-\""),
        (
            "[a b]",
            2,
            "git reference \"a b\" cannot contain whitespace",
        ),
        (
            "[a..b]",
            2,
            "git reference \"a..b\" cannot contain \"..\" (write a range as [a...b])",
        ),
        ("[a.]", 2, "git reference \"a.\" cannot end with \".\""),
        (
            "{./a",
            5,
            "expected \"}\" to close the path opened at column 1",
        ),
        ("{}", 2, "expected a path after \"{\", found \"}\""),
        (
            "^foo",
            1,
            "\"^\" excludes the target of a graph expression, so it needs \"...\" before or \
             after the target (e.g. \"...^foo\" or \"^foo...\")",
        ),
        (
            "foo...0",
            7,
            "a depth must be at least 1, found \"0\" (use the target without \"...\")",
        ),
        (
            "99999999999999999999999...x",
            1,
            "depth \"99999999999999999999999\" is too large",
        ),
        (
            "  ./../x",
            3,
            "path \"./../x\" climbs above the repository root",
        ),
        (
            "a/b",
            1,
            "\"a/b\" is not a name (names cannot contain \"/\"); write a path as \"./a/b\"",
        ),
        (
            "name=a/b",
            6,
            "\"a/b\" is not a name (names cannot contain \"/\"); write a path as \"./a/b\"",
        ),
        (
            "..",
            1,
            "\"..\" is not a name; the repository root is \"./\"",
        ),
        (
            "{./a/[b}",
            2,
            "invalid glob \"a/[b\": unclosed character class; missing ']'",
        ),
        (
            "é | ü |",
            8,
            "expected a name, path or [git range] after \"|\"",
        ),
    ];
    for &(query, column, message) in cases {
        let err = parse_query(query).unwrap_err();
        assert_eq!(
            err,
            EngineError::FilterSyntax {
                query: query.to_string(),
                column,
                message: message.to_string(),
            },
            "{query:?}"
        );
    }
    assert_eq!(
        parse_query("foo..|").unwrap_err().to_string(),
        "filter \"foo..|\", column 7: expected a name, path or [git range] after \"|\""
    );
}

#[test]
fn filters_file() {
    let contents = "# units to plan\n\n  app | ./prod/**\nvpc...\r\n   # indented comment\n!web\n";
    let filters = Filters::parse_file(".terragrunt-filters", contents).unwrap();
    let sources: Vec<&str> = filters.iter().map(Filter::source).collect();
    assert_eq!(sources, ["app | ./prod/**", "vpc...", "!web"]);
    let selected: Vec<String> = filters
        .select(&sample(), None)
        .unwrap()
        .into_iter()
        .map(|i| sample().path(i).to_string())
        .collect();
    assert_eq!(selected, set(&["net/vpc", "prod/app"]));

    let err = Filters::parse_file("ci/filters", "app\n\n  [main\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "ci/filters:3:8: filter \"  [main\": expected \"]\" to close the git range opened at column 3"
    );
    assert!(
        Filters::parse_file("f", "# nothing\n\n")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn extend_appends_flags_to_the_file() {
    let mut filters = Filters::parse(["app"]).unwrap();
    filters.extend(Filters::parse_file("f", "!./dev/*\n").unwrap());
    assert!(!filters.is_empty());
    assert_eq!(
        filters
            .select(&sample(), None)
            .unwrap()
            .into_iter()
            .map(|i| sample().path(i).to_string())
            .collect::<Vec<_>>(),
        ["prod/app"]
    );
}

// ---- properties ----

/// Names the parser accepts: no specials, no `/`, no `...`, trimmed.
fn arb_name(wide: bool) -> BoxedStrategy<String> {
    if !wide {
        return prop::sample::select(vec!["x", "y", "z", "w", "*", "x*", "?"])
            .prop_map(str::to_string)
            .boxed();
    }
    prop_oneof![
        "[a-z0-9][a-z0-9_. *?-]{0,6}",
        "[0-9]{1,3}",
        Just(".hidden".to_string()),
        Just("a.".to_string()),
    ]
    .prop_filter("not a valid name", |n| {
        n == n.trim() && !n.contains("...") && !n.contains("**") && n != "." && n != ".."
    })
    .boxed()
}

/// Normalized path globs.
fn arb_path(wide: bool) -> BoxedStrategy<String> {
    let parts: Vec<&str> = if wide {
        vec![
            "a", "b", "*", "**", "x y", "c.", "p|q", "w...z", "d*", "[ab]",
        ]
    } else {
        vec!["a", "b", "c", "*", "**", "x", "y"]
    };
    prop::collection::vec(prop::sample::select(parts), 0..4)
        .prop_map(|v| v.join("/"))
        .boxed()
}

fn arb_ref() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9_/^~@.-]{0,6}".prop_filter("not a valid ref", |r| {
        !r.contains("..") && !r.ends_with('.')
    })
}

fn arb_target(wide: bool) -> impl Strategy<Value = Target> {
    prop_oneof![
        3 => arb_name(wide).prop_map(Target::Name),
        3 => arb_path(wide).prop_map(Target::Path),
        1 => prop_oneof![Just(Kind::Unit), Just(Kind::Stack)].prop_map(Target::Type),
        1 => arb_path(wide)
            .prop_filter("reading needs a file", |p| !p.is_empty() && !p.contains(super::ast::SPECIAL) && !p.contains("..."))
            .prop_map(Target::Reading),
        1 => (arb_ref(), prop::option::of(arb_ref()))
            .prop_map(|(base, head)| Target::Git { base, head }),
    ]
}

fn arb_reach() -> impl Strategy<Value = Reach> {
    prop_oneof![
        Just(Reach::All),
        (1usize..4).prop_map(|d| Reach::Depth(NonZeroUsize::new(d).unwrap())),
    ]
}

fn arb_term(wide: bool) -> impl Strategy<Value = Term> {
    let direction = prop_oneof![
        arb_reach().prop_map(Direction::Dependencies),
        arb_reach().prop_map(Direction::Dependents),
        (arb_reach(), arb_reach()).prop_map(|(dependents, dependencies)| Direction::Both {
            dependents,
            dependencies
        }),
    ];
    let leaf = prop_oneof![
        arb_target(wide).prop_map(Term::Target),
        (arb_target(wide), direction, any::<bool>()).prop_map(
            |(target, direction, exclude_target)| Term::Graph(GraphExpr {
                target,
                direction,
                exclude_target
            })
        ),
    ];
    leaf.prop_recursive(2, 4, 1, |inner| inner.prop_map(|t| Term::Not(Box::new(t))))
}

fn arb_query(wide: bool) -> impl Strategy<Value = Query> {
    prop::collection::vec(arb_term(wide), 1..4).prop_map(|terms| Query { terms })
}

/// A random DAG over up to nine units in three directories; a unit only
/// depends on units earlier in the list, so there are no cycles.
fn arb_graph() -> impl Strategy<Value = Graph> {
    let all: Vec<String> = ["a", "b", "a/c"]
        .iter()
        .flat_map(|d| ["x", "y", "z"].iter().map(move |n| format!("{d}/{n}")))
        .collect();
    (
        prop::sample::subsequence(all, 1..=9).prop_shuffle(),
        prop::collection::vec(any::<bool>(), 81),
    )
        .prop_map(|(paths, edges)| {
            let units = paths
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let deps: Vec<&str> = (0..i)
                        .filter(|&j| edges[i * 9 + j])
                        .map(|j| paths[j].as_str())
                        .collect();
                    unit(p, &deps, &[&format!("{p}.hcl")])
                })
                .collect();
            Graph::build(units).0
        })
}

/// Deterministic, different per range, and naming a removed unit.
struct HashGit;

impl GitRanges for HashGit {
    fn changed(&self, base: &str, head: Option<&str>) -> crate::error::Result<RangeChanges> {
        let salt = base.len() + head.map_or(7, str::len);
        let changed: BTreeSet<RepoPath> = ["a", "b", "a/c"]
            .iter()
            .flat_map(|d| ["x", "y", "z"].iter().map(move |n| format!("{d}/{n}")))
            .enumerate()
            .filter(|(i, _)| (i + salt).is_multiple_of(3))
            .map(|(_, p)| RepoPath::new(&p).unwrap())
            .collect();
        Ok(RangeChanges {
            changed,
            removed: [RepoPath::new("gone/x").unwrap()].into(),
            stacks: BTreeSet::new(),
        })
    }
}

fn run(g: &Graph, queries: &[String]) -> BTreeSet<usize> {
    Filters::parse(queries.iter().map(String::as_str))
        .unwrap()
        .select(g, Some(&HashGit))
        .unwrap()
        .into_iter()
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn display_reparses_to_the_same_ast(q in arb_query(true)) {
        let shown = q.to_string();
        prop_assert_eq!(parse_query(&shown), Ok(q), "{}", shown);
    }

    #[test]
    fn parser_never_panics_and_reports_a_column_in_range(
        s in prop_oneof![
            "[a-z0-9./*!|={}\\[\\]^ -]{0,16}",
            "(\\.\\.\\.|[0-9]|x|!|\\^|\\||\\[|\\]|\\{|\\}|=|/| ){0,12}",
            any::<String>(),
        ]
    ) {
        match parse_query(&s) {
            Ok(q) => {
                // Whatever parses also has a canonical form that means the same.
                let shown = q.to_string();
                prop_assert_eq!(parse_query(&shown), Ok(q), "{:?} shown as {:?}", s, shown);
            }
            Err(EngineError::FilterSyntax { query, column, message }) => {
                prop_assert_eq!(&query, &s);
                prop_assert!((1..=s.chars().count() + 1).contains(&column), "column {} in {:?}", column, s);
                prop_assert!(!message.is_empty());
            }
            Err(other) => prop_assert!(false, "not a syntax error: {:?}", other),
        }
    }

    #[test]
    fn negation_selects_the_complement(g in arb_graph(), t in arb_term(false)) {
        let positive = run(&g, &[t.to_string()]);
        let negated = run(&g, &[format!("!{t}")]);
        let everything: BTreeSet<usize> = (0..g.len()).collect();
        prop_assert_eq!(negated, &everything - &positive);
    }

    #[test]
    fn pipe_intersects_and_flags_union(
        g in arb_graph(),
        t1 in arb_term(false),
        t2 in arb_term(false),
    ) {
        let s1 = run(&g, &[t1.to_string()]);
        let s2 = run(&g, &[t2.to_string()]);
        prop_assert_eq!(run(&g, &[format!("{t1} | {t2}")]), &s1 & &s2);
        if !matches!(t1, Term::Not(_)) && !matches!(t2, Term::Not(_)) {
            prop_assert_eq!(run(&g, &[t1.to_string(), t2.to_string()]), &s1 | &s2);
        }
    }
}

mod run_filters {
    //! `narrow`: the sets a run obeys, what they leave out and why, and the
    //! refusal when a left-out unit is needed first.
    use super::*;
    use crate::change::{Affected, AffectedUnit, Reason};
    use live_ci_core::deploy::Action;

    fn affected(units: &[(&str, Action)]) -> Affected {
        Affected {
            units: units
                .iter()
                .map(|(p, a)| AffectedUnit {
                    path: RepoPath::new(p).unwrap(),
                    action: *a,
                    reasons: vec![Reason::Changed],
                })
                .collect(),
            skipped: Vec::new(),
        }
    }

    fn set(source: &str, queries: &[&str]) -> FilterSet {
        FilterSet {
            source: source.to_string(),
            filters: Filters::parse(queries.iter().copied()).unwrap(),
        }
    }

    #[test]
    fn a_unit_runs_only_when_every_set_selects_it() {
        let g = sample();
        let all = affected(&[
            ("net/vpc", Action::Apply),
            ("dev/app", Action::Apply),
            ("dev/db", Action::Apply),
            ("net/dns", Action::Apply),
        ]);
        let filters = RunFilters::new(vec![
            set(FILTERS_FILE, &["./net/**", "./dev/**"]),
            set(DEPLOY_FILTERS, &["!dns", "!./dev/db"]),
        ]);
        let n = narrow(all, &g, None, &filters, None, None).unwrap();
        let kept: Vec<&str> = n.affected.units.iter().map(|u| u.path.as_str()).collect();
        assert_eq!(kept, ["net/vpc", "dev/app"]);
        let why: Vec<String> = n
            .excluded
            .iter()
            .map(|e| format!("{} {}", e.path, e.describe()))
            .collect();
        assert_eq!(
            why,
            [
                "dev/db deploy_filters: \"!./dev/db\"",
                "net/dns deploy_filters: \"!dns\""
            ]
        );
        // Left out by the file: none of its positive queries selected it.
        let filters = RunFilters::new(vec![set(FILTERS_FILE, &["./dev/**", "db"])]);
        let n = narrow(
            affected(&[("net/dns", Action::Apply)]),
            &g,
            None,
            &filters,
            None,
            None,
        )
        .unwrap();
        assert_eq!(
            n.excluded[0].describe(),
            ".live-ci-filters: selected by none of \"./dev/**\", \"db\""
        );
    }

    #[test]
    fn leaving_out_an_applys_dependency_is_refused_naming_both() {
        let g = sample();
        let all = affected(&[("net/vpc", Action::Apply), ("prod/db", Action::Apply)]);
        let filters = RunFilters::new(vec![set(DEPLOY_FILTERS, &["!vpc"])]);
        let err = narrow(all, &g, None, &filters, None, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unit \"prod/db\" needs unit \"net/vpc\" to apply first in this run, and the \
             filters leave it out (deploy_filters: \"!vpc\"): select both units or neither"
        );
    }

    #[test]
    fn leaving_out_a_destroys_dependent_is_refused_naming_both() {
        // Both removed at head: prod/db is destroyed only after prod/app,
        // which depended on it.
        let base = sample();
        let (head, _) = Graph::build(vec![unit("net/vpc", &[], &[])]);
        let all = affected(&[("prod/app", Action::Destroy), ("prod/db", Action::Destroy)]);
        let filters = RunFilters::new(vec![set(FILTERS_FILE, &["!./prod/app"])]);
        let err = narrow(all, &head, Some(&base), &filters, None, None).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("unit \"prod/db\" needs unit \"prod/app\" to be destroyed first"),
            "{err}"
        );
    }

    #[test]
    fn deploy_filters_errors_name_the_entry_and_column() {
        let err = Filters::parse_list(
            DEPLOY_FILTERS,
            &[
                "./dev/**".to_string(),
                "# note".to_string(),
                "a |".to_string(),
            ],
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("deploy_filters:3:"), "{err}");
    }
}
