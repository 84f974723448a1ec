//! The integration tests of the approval_response Lambda: the responder, the run page and the browser's view of it: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module. The tests that vote through links
//! the real approval_request handler mails (and the SES, IAM, race and round
//! trip tests built on them) are live-ci-e2e's `approval` target
//! (`tests/e2e/tests/approval/`): Lambdas do not dev-depend on each other.

mod browser;
mod github_vote;
mod pages;
mod ports;
mod responder;
mod run_page;
mod server;
