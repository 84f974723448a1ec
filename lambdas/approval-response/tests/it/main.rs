//! The integration tests of the approval_response Lambda: the responder, SES in LocalStack and the browser approval: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod approval_store_only;
mod browser;
mod github_votes;
mod iam_denied;
mod plan_page;
mod ports;
#[path = "../../../approval-request/tests/fakes/mod.rs"]
mod requester_fakes;
mod responder;
mod round_trips;
mod run_page;
mod server;
mod ses_localstack;
mod vote_race;
