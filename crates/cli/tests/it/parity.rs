//! Terragrunt parity: `live-ci find`/`graph`/`affected` answer as `terragrunt find`
//! does, one table-driven test per behaviour group of issue 15. Each fixture repo
//! is built in the test (with a git history where the group needs one); each case
//! cites the terragrunt test or code it mirrors (gruntwork-io/terragrunt:
//! `test/integration_filter_test.go`, `test/integration_find_test.go`,
//! `internal/worktrees/worktrees.go`, `pkg/config/config_helpers.go`).
#![allow(clippy::unwrap_used)] // test helpers panic on set-up failure by design

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

/// A scratch git repository on branch `main`.
struct Repo {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("repo");
        std::fs::create_dir_all(&dir).unwrap();
        let repo = Repo { _tmp: tmp, dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    fn write(&self, path: &str, body: &str) -> &Repo {
        let p = self.dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
        self
    }

    fn remove(&self, path: &str) -> &Repo {
        let p = self.dir.join(path);
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
        self
    }

    fn git(&self, args: &[&str]) -> String {
        live_ci_testkit::git(&self.dir, args)
    }

    fn commit(&self, message: &str) -> &Repo {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_live-ci"))
            .args(args)
            .arg("--repo")
            .arg(&self.dir)
            .output()
            .unwrap()
    }

    /// The JSON of a command that must succeed.
    fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// `find` with these extra arguments: the listed paths, sorted.
    fn find(&self, extra: &[&str]) -> Vec<String> {
        let mut args = vec!["find", "--no-filters-file"];
        args.extend(extra);
        paths(&self.json(&args)["units"])
    }

    fn find_filter(&self, query: &str) -> Vec<String> {
        self.find(&["--filter", query])
    }
}

fn paths(units: &Value) -> Vec<String> {
    units
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap().to_string())
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// One case: the query, the expected paths, and the terragrunt behaviour it mirrors.
struct Case {
    query: &'static str,
    expect: &'static [&'static str],
    mirrors: &'static str,
}

fn check(repo: &Repo, cases: &[Case]) {
    for c in cases {
        assert_eq!(
            repo.find_filter(c.query),
            c.expect,
            "--filter {:?} (mirrors {})",
            c.query,
            c.mirrors
        );
    }
}

const EMPTY_UNIT: &str = "# a unit\n";

/// The repository of terragrunt's TestFilterFlagWithFindGitFilter, plus a
/// dependent, a dependency, a reader of a shared file and a stack: on branch
/// `feature` one unit is modified, one removed, one created, one's non-config
/// file changed, and the shared file changed.
fn git_range_repo() -> Repo {
    let repo = Repo::new();
    repo.write("unit-to-be-modified/terragrunt.hcl", EMPTY_UNIT)
        .write("unit-to-be-removed/terragrunt.hcl", EMPTY_UNIT)
        .write("unit-to-be-removed/main.tf", "# tf\n")
        .write("unit-to-be-untouched/terragrunt.hcl", EMPTY_UNIT)
        .write("base-dep/terragrunt.hcl", EMPTY_UNIT)
        .write(
            "unit-with-tf-change/terragrunt.hcl",
            "dependency \"b\" {\n  config_path = \"../base-dep\"\n}\n",
        )
        .write("unit-with-tf-change/main.tf", "# v1\n")
        .write(
            "dependent/terragrunt.hcl",
            "dependency \"m\" {\n  config_path = \"../unit-to-be-modified\"\n}\n",
        )
        .write("common/env.hcl", "locals {\n  region = \"eu\"\n}\n")
        .write(
            "reader/terragrunt.hcl",
            "locals {\n  env = read_terragrunt_config(\"../common/env.hcl\")\n}\n",
        )
        .write("README.md", "# live\n")
        .commit("initial");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("unit-to-be-modified/terragrunt.hcl", "# modified\n")
        .remove("unit-to-be-removed")
        .write("unit-to-be-created/terragrunt.hcl", EMPTY_UNIT)
        .write("unit-with-tf-change/main.tf", "# v2\n")
        .write("common/env.hcl", "locals {\n  region = \"us\"\n}\n")
        .write("README.md", "# live, changed\n")
        .commit("create, modify and remove units");
    repo
}

/// Group 1: a git range selects the units whose files changed in it; their
/// dependents come only from an explicit graph operator.
#[test]
fn group1_git_ranges_select_changed_units_only() {
    let repo = git_range_repo();
    let changed: &[&str] = &[
        "reader",
        "unit-to-be-created",
        "unit-to-be-modified",
        "unit-to-be-removed",
        "unit-with-tf-change",
    ];
    check(
        &repo,
        &[
            Case {
                query: "[main...HEAD]",
                expect: changed,
                mirrors: "TestFilterFlagWithFindGitFilter 'standard git filter' (created, \
                          modified, removed), plus worktrees.go Expand: a changed file next to \
                          a terragrunt.hcl selects that unit, any other becomes reading=<file>",
            },
            Case {
                query: "[HEAD~1...HEAD]",
                expect: changed,
                mirrors: "TestFilterFlagWithFindGitFilter's [HEAD~1...HEAD]",
            },
            Case {
                query: "...[main...HEAD]",
                expect: &[
                    "dependent",
                    "reader",
                    "unit-to-be-created",
                    "unit-to-be-modified",
                    "unit-to-be-removed",
                    "unit-with-tf-change",
                ],
                mirrors: "evaluator.go evaluateGraphExpression: '...' before a target adds its \
                          dependents",
            },
            Case {
                query: "[main...HEAD]...",
                expect: &[
                    "base-dep",
                    "reader",
                    "unit-to-be-created",
                    "unit-to-be-modified",
                    "unit-to-be-removed",
                    "unit-with-tf-change",
                ],
                mirrors: "evaluator.go evaluateGraphExpression: '...' after a target adds its \
                          dependencies",
            },
            Case {
                query: "[main...HEAD] | !reader",
                expect: &[
                    "unit-to-be-created",
                    "unit-to-be-modified",
                    "unit-to-be-removed",
                    "unit-with-tf-change",
                ],
                mirrors: "evaluator.go evaluateInfixExpression: '|' narrows the git filter's \
                          components",
            },
            Case {
                query: "[main]",
                expect: changed,
                mirrors: "parser.go: a single reference is compared with the current tree",
            },
        ],
    );
    // `affected` keeps its own meaning: changed, read and every dependent.
    let v = repo.json(&["affected", "--base", "main", "--head", "HEAD"]);
    assert_eq!(
        paths(&v["units"]),
        [
            "dependent",
            "reader",
            "unit-to-be-created",
            "unit-to-be-modified",
            "unit-with-tf-change"
        ]
    );
}

/// Group 2: units a range removed are listed (they exist at its base), marked
/// `"removed": true`.
#[test]
fn group2_units_removed_in_a_range_are_listed_and_marked() {
    let repo = git_range_repo();
    let cases = [
        Case {
            query: "[main...HEAD] | ./unit-to-be-r*",
            expect: &["unit-to-be-removed"],
            mirrors: "worktrees.go expandDiffPaths: a removed terragrunt.hcl is a path filter \
                      evaluated in the from worktree, so find lists the removed unit",
        },
        Case {
            query: "[main...HEAD] | type=unit | name=*removed",
            expect: &["unit-to-be-removed"],
            mirrors: "TestFilterFlagWithFindGitFilter: the removed unit is a unit component",
        },
        Case {
            query: "[main...HEAD] | !./unit-to-be-removed",
            expect: &[
                "reader",
                "unit-to-be-created",
                "unit-to-be-modified",
                "unit-with-tf-change",
            ],
            mirrors: "evaluator.go evaluatePrefixExpression: negation removes it like any component",
        },
        Case {
            query: "./unit-to-be-removed",
            expect: &[],
            mirrors: "discovery without a git filter walks the working tree only",
        },
    ];
    check(&repo, &cases);
    let v = repo.json(&["find", "--no-filters-file", "--filter", "[main...HEAD]"]);
    let units = v["units"].as_array().unwrap();
    let removed: Vec<&Value> = units.iter().filter(|u| u["removed"] == true).collect();
    assert_eq!(removed.len(), 1, "{v}");
    assert_eq!(removed[0]["path"], "unit-to-be-removed");
    assert_eq!(removed[0]["type"], "unit");
    // Only removed units carry the key.
    assert!(units.iter().filter(|u| u["removed"].is_null()).count() == units.len() - 1);
    let table = repo.run(&["find", "--filter", "[main...HEAD]", "--format", "table"]);
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("unit-to-be-removed") && l.ends_with("removed")),
        "{text}"
    );
}

/// Group 3: `mark_as_read` of a file that does not exist records the path.
#[test]
fn group3_mark_as_read_of_a_missing_file_records_it() {
    // terragrunt's test/fixtures/filter/mark-as-read: none of the marked files exist.
    let repo = Repo::new();
    repo.write(
        "unit-normal/terragrunt.hcl",
        "locals {\n  marked = mark_as_read(\"foo.txt\")\n}\n",
    )
    .write(
        "unit-duplicate/terragrunt.hcl",
        "locals {\n  marked1 = mark_as_read(\"foo.txt\")\n  marked2 = mark_as_read(\"foo.txt\")\n  marked3 = mark_as_read(\"bar.txt\")\n}\n",
    )
    .write("unit-no-mark/terragrunt.hcl", EMPTY_UNIT)
    .write(
        "unit-empty/terragrunt.hcl",
        "locals {\n  marked = mark_as_read(\"\")\n}\n",
    )
    .write(
        "unit-later/terragrunt.hcl",
        "locals {\n  f = mark_as_read(\"../shared/later.cfg\")\n}\n",
    )
    .commit("initial");
    let t = "TestFilterFlagWithMarkAsRead";
    check(
        &repo,
        &[
            Case {
                query: "reading=unit-normal/foo.txt",
                expect: &["unit-normal"],
                mirrors: t,
            },
            Case {
                query: "reading=*/foo.txt",
                expect: &["unit-duplicate", "unit-normal"],
                mirrors: t,
            },
            Case {
                query: "reading=unit-duplicate/bar.txt",
                expect: &["unit-duplicate"],
                mirrors: t,
            },
            Case {
                query: "reading=*/*.txt",
                expect: &["unit-duplicate", "unit-normal"],
                mirrors: t,
            },
            Case {
                query: "reading=**/foo.txt",
                expect: &["unit-duplicate", "unit-normal"],
                mirrors: t,
            },
            Case {
                query: "reading=*/nonexistent.txt",
                expect: &[],
                mirrors: t,
            },
        ],
    );
    // Listed without errors: a missing marked file is not a problem.
    let out = repo.run(&["graph"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["errors"], serde_json::json!([]));
    // A later change creating the file selects the unit (config_helpers.go
    // markAsRead adds the path whether or not it exists).
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("shared/later.cfg", "now\n").commit("create it");
    assert_eq!(repo.find_filter("[main...HEAD]"), ["unit-later"]);
    let v = repo.json(&["affected", "--base", "main", "--head", "HEAD"]);
    assert_eq!(v["units"][0]["path"], "unit-later");
    assert_eq!(
        v["units"][0]["reasons"],
        serde_json::json!(["read-file-changed"])
    );
}

/// Group 4: `mark_glob_as_read` marks every match, and a git range expands it
/// again at its head (added files) and base (deleted files).
#[test]
fn group4_mark_glob_as_read() {
    let repo = Repo::new();
    // terragrunt's test/fixtures/mark-glob-as-read
    repo.write(
        "unit/terragrunt.hcl",
        "locals {\n  settings = mark_glob_as_read(\"{*.yaml,**/*.yaml}\")\n}\n",
    )
    .write("unit/settings.yaml", "environment: test\n")
    .write("unit/nested/deep.yaml", "x: 1\n")
    .write("unit-no-glob/terragrunt.hcl", "# marks nothing\n")
    .write("unit-no-glob/data.yaml", "environment: test\n")
    // TestFilterFlagWithGitFilterMarkGlobAsRead
    .write(
        "unit-reads-added/terragrunt.hcl",
        "locals {\n  config = mark_glob_as_read(\"../shared-added/*.yml\")\n}\n",
    )
    .write(
        "unit-reads-removed/terragrunt.hcl",
        "locals {\n  config = mark_glob_as_read(\"../shared-removed/*.yml\")\n}\n",
    )
    .write(
        "unit-reads-untouched/terragrunt.hcl",
        "locals {\n  config = mark_glob_as_read(\"--terragrunt-boundary=..\", \"../shared-untouched/*.yml\")\n}\n",
    )
    .write("shared-removed/old.yml", "a: 1\n")
    .write("shared-untouched/keep.yml", "b: 2\n")
    .commit("initial");
    let fixture = "integration mark-glob-as-read fixture (reading= over expanded matches)";
    check(
        &repo,
        &[
            Case {
                query: "reading=unit/settings.yaml",
                expect: &["unit"],
                mirrors: fixture,
            },
            Case {
                query: "reading=unit/nested/deep.yaml",
                expect: &["unit"],
                mirrors: fixture,
            },
            Case {
                query: "reading=unit-no-glob/data.yaml",
                expect: &[],
                mirrors: "fixture unit-no-glob: data.yaml must not match reading= filters",
            },
            Case {
                query: "reading=shared-untouched/*.yml",
                expect: &["unit-reads-untouched"],
                mirrors: "config_helpers.go markGlobAsRead: a leading --terragrunt-boundary \
                          argument is not the glob",
            },
        ],
    );
    repo.git(&["checkout", "-q", "-b", "glob-read-test"]);
    repo.write("shared-added/new.yml", "c: 3\n")
        .remove("shared-removed")
        .commit("add and remove glob-read config files");
    assert_eq!(
        repo.find_filter("[HEAD~1...HEAD]"),
        ["unit-reads-added", "unit-reads-removed"],
        "mirrors TestFilterFlagWithGitFilterMarkGlobAsRead"
    );
}

/// Group 5: one unresolvable unit does not fail the listing; `--strict` does.
#[test]
fn group5_an_unresolvable_unit_stays_listed_with_its_errors() {
    let repo = Repo::new();
    repo.write(
        "no-module/terragrunt.hcl",
        "terraform {\n  source = \"../modules/missing\"\n}\n",
    )
    .write(
        "no-read/terragrunt.hcl",
        "locals {\n  c = read_terragrunt_config(\"../common/missing.hcl\")\n}\n",
    )
    .write("fine/terragrunt.hcl", EMPTY_UNIT);
    let all = ["fine", "no-module", "no-read"];
    struct Run {
        args: &'static [&'static str],
        code: i32,
        mirrors: &'static str,
    }
    let runs = [
        Run {
            args: &["find"],
            code: 0,
            mirrors: "terragrunt find lists every component; parse problems do not drop others",
        },
        Run {
            args: &["graph"],
            code: 0,
            mirrors: "same, for the graph listing",
        },
        Run {
            args: &["find", "--strict"],
            code: 1,
            mirrors: "live-ci --strict: any unresolved unit fails the listing",
        },
        Run {
            args: &["graph", "--strict"],
            code: 1,
            mirrors: "live-ci --strict for graph",
        },
    ];
    for r in &runs {
        let out = repo.run(r.args);
        let err = stderr(&out);
        assert_eq!(
            out.status.code(),
            Some(r.code),
            "{:?} ({}): {err}",
            r.args,
            r.mirrors
        );
        // Either way each problem is on stderr, naming the unit's file and the path.
        assert!(
            err.contains("no-module/terragrunt.hcl") && err.contains("modules/missing"),
            "{err}"
        );
        assert!(
            err.contains("no-read/terragrunt.hcl") && err.contains("common/missing.hcl"),
            "{err}"
        );
        if r.code == 0 {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(paths(&v["units"]), all, "{:?}", r.args);
            let errors = |p: &str| {
                v["units"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|u| u["path"] == p)
                    .unwrap()["errors"]
                    .clone()
            };
            assert!(errors("fine").is_null(), "{v}");
            assert!(
                errors("no-module")[0]
                    .as_str()
                    .unwrap()
                    .contains("local module directory \"modules/missing\" does not exist"),
                "{v}"
            );
            assert!(
                errors("no-read")[0]
                    .as_str()
                    .unwrap()
                    .contains("no such file \"common/missing.hcl\""),
                "{v}"
            );
        }
    }
    // Filters still apply to broken units.
    assert_eq!(repo.find_filter("no-*"), ["no-module", "no-read"]);
}

/// Group 6: hidden directories are discovered by default; `--no-hidden` skips
/// them; `.git`, `.terraform` and `.terragrunt-cache` never count.
#[test]
fn group6_hidden_directories() {
    // terragrunt's test/fixtures/find/hidden, plus the always-skipped directories.
    let repo = Repo::new();
    repo.write(".hide/unit/terragrunt.hcl", EMPTY_UNIT)
        .write("stack/terragrunt.stack.hcl", "# a stack\n")
        .write("unit/terragrunt.hcl", EMPTY_UNIT)
        .write("unit/.terragrunt-cache/x/terragrunt.hcl", EMPTY_UNIT)
        .write("unit/.terraform/modules/m/terragrunt.hcl", EMPTY_UNIT)
        .write(".git/fake/terragrunt.hcl", EMPTY_UNIT);
    struct Run {
        args: &'static [&'static str],
        expect: &'static [&'static str],
        mirrors: &'static str,
    }
    for r in [
        Run {
            args: &[],
            expect: &[".hide/unit", "stack", "unit"],
            mirrors: "TestFindHidden 'default (includes hidden)'",
        },
        Run {
            args: &["--no-hidden"],
            expect: &["stack", "unit"],
            mirrors: "TestFindHidden 'no-hidden flag excludes hidden'",
        },
        Run {
            args: &["--filter", "./.hide/**"],
            expect: &[".hide/unit"],
            mirrors: "a path filter into a hidden directory finds units there",
        },
        Run {
            args: &["--no-hidden", "--filter", "./.hide/**"],
            expect: &[],
            mirrors: "phase_filesystem.go skipDirIfIgnorable: --no-hidden skips the walk",
        },
        Run {
            args: &["--filter", "./**/x"],
            expect: &[],
            mirrors: "util.SkipDirIfIgnorable: .git, .terraform, .terragrunt-cache never walked",
        },
    ] {
        assert_eq!(
            repo.find(r.args),
            r.expect,
            "{:?} (mirrors {})",
            r.args,
            r.mirrors
        );
    }
    // A unit may still read a file in a hidden directory under --no-hidden.
    repo.write(".config/env.hcl", "locals {\n  x = 1\n}\n")
        .write(
            "reader/terragrunt.hcl",
            "locals {\n  e = read_terragrunt_config(\"../.config/env.hcl\")\n}\n",
        );
    let out = repo.run(&["graph", "--no-hidden", "--strict"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Group 7: `reading=/abs/path` is a filesystem path; relative stays relative.
#[test]
fn group7_absolute_reading_paths_are_filesystem_paths() {
    let repo = Repo::new();
    repo.write("common/app.hcl", "locals {\n  x = 1\n}\n")
        .write(
            "app/terragrunt.hcl",
            "locals {\n  c = read_terragrunt_config(\"../common/app.hcl\")\n}\n",
        )
        .write("other/terragrunt.hcl", EMPTY_UNIT);
    let root = std::fs::canonicalize(&repo.dir).unwrap();
    let root = root.to_str().unwrap();
    let abs = format!("reading={root}/common/app.hcl");
    let abs_glob = format!("reading={root}/common/*.hcl");
    let elsewhere = "reading=/common/app.hcl".to_string();
    let cases: [(&str, &[&str], &str); 4] = [
        (
            &abs,
            &["app"],
            "evaluator.go AttributeReading: matched against the absolute read paths",
        ),
        (&abs_glob, &["app"], "same, as a glob"),
        (
            &elsewhere,
            &[],
            "an absolute path is not repository-relative: /common is not <repo>/common",
        ),
        (
            "reading=common/app.hcl",
            &["app"],
            "evaluator.go AttributeReading: relative to the working directory",
        ),
    ];
    for (query, expect, mirrors) in cases {
        assert_eq!(
            repo.find_filter(query),
            expect,
            "{query} (mirrors {mirrors})"
        );
    }
}

/// Stacks: `type=stack` selects stack directories; a stack live-ci cannot
/// generate (here: sources outside the repository) is named with the reason.
#[test]
fn stacks_are_selected_by_type_and_generated_units_warned_about() {
    let repo = Repo::new();
    repo.write(
        "live/terragrunt.stack.hcl",
        "unit \"vpc\" {\n  source = \"../catalog/units/vpc\"\n  path   = \"vpc\"\n}\n\nstack \"svc\" {\n  source = \"../catalog/stacks/svc\"\n  path   = \"svc\"\n  no_dot_terragrunt_stack = true\n}\n",
    )
    .write("unit/terragrunt.hcl", EMPTY_UNIT);
    for (query, expect, mirrors) in [
        (
            "type=stack",
            &["live"][..],
            "evaluator.go AttributeType 'stack': *component.Stack only",
        ),
        ("type=unit", &["unit"][..], "AttributeType 'unit'"),
        (
            "./live",
            &["live"][..],
            "a path filter matches the stack directory",
        ),
    ] {
        assert_eq!(
            repo.find_filter(query),
            expect,
            "{query} (mirrors {mirrors})"
        );
    }
    // TestFindBasicJSON: stacks are listed with their type.
    let v = repo.json(&["find", "--no-filters-file"]);
    assert_eq!(v["units"][0]["path"], "live");
    assert_eq!(v["units"][0]["type"], "stack");
    // Its sources are not in the repository: live-ci cannot generate it,
    // and says so, naming the file, the block and the construct.
    let out = repo.run(&["find"]);
    let err = stderr(&out);
    assert!(
        err.contains(
            "live/terragrunt.stack.hcl: unit \"vpc\": source \"../catalog/units/vpc\" is not a directory of the repository"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "stack \"live/terragrunt.stack.hcl\" is not generated, so its units are not discovered"
        ),
        "{err}"
    );
}
