#![allow(clippy::unwrap_used)]
//! The module's documentation contract: every variable has a description and a
//! type, every output a description, and `infra/README.md`'s inputs and outputs
//! tables are the ones generated from the `.tf` files (regenerate them with
//! `LIVE_CI_BLESS=1 cargo test -p live-ci-contract --test it docs::`).

use std::path::PathBuf;

use live_ci_contract::{Module, docs_tables};

const BEGIN: &str = "<!-- BEGIN_TF_DOCS -->\n";
const END: &str = "<!-- END_TF_DOCS -->";

fn infra() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../infra")
}

#[test]
fn every_variable_has_a_description_and_a_type_and_every_output_a_description() {
    for dir in [infra(), infra().join("examples/complete")] {
        let m = Module::load(&dir).unwrap_or_else(|e| panic!("{e}"));
        for v in m.variables() {
            assert!(
                v.description
                    .as_deref()
                    .is_some_and(|d| !d.trim().is_empty()),
                "{}: variable {} has no description",
                dir.display(),
                v.name
            );
            assert!(
                v.type_expr.is_some(),
                "{}: variable {} has no type",
                dir.display(),
                v.name
            );
        }
        for o in m.outputs() {
            assert!(
                o.description
                    .as_deref()
                    .is_some_and(|d| !d.trim().is_empty()),
                "{}: output {} has no description",
                dir.display(),
                o.name
            );
        }
    }
}

#[test]
fn the_readme_tables_match_the_module() {
    let m = Module::load(infra()).unwrap_or_else(|e| panic!("{e}"));
    let tables = docs_tables(&m);
    let path = infra().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (Some(start), Some(end)) = (readme.find(BEGIN), readme.find(END)) else {
        panic!("{}: no {BEGIN:?} … {END:?} markers", path.display());
    };
    let current = &readme[start + BEGIN.len()..end];
    if current == tables {
        return;
    }
    if std::env::var_os("LIVE_CI_BLESS").is_some() {
        let updated = format!(
            "{}{tables}{}",
            &readme[..start + BEGIN.len()],
            &readme[end..]
        );
        std::fs::write(&path, updated).unwrap();
        return;
    }
    panic!(
        "{}: the inputs/outputs tables are out of date; run \
         LIVE_CI_BLESS=1 cargo test -p live-ci-contract --test it docs::",
        path.display()
    );
}
