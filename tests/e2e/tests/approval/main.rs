//! The approval path across its two Lambdas: approval_request mails the
//! signed links (real requester, its port fakes), approval_response's handler
//! answers them against a real PostgreSQL metadb and LocalStack (SES, KMS,
//! Step Functions, IAM). Moved here from approval-response's tests, whole, so
//! that no Lambda dev-depends on another (issue 33 item 7); one test binary,
//! run beside the others (it deploys nothing, so it shares the local cloud).
//!
//! The test support both crates share is included from where it lives (the
//! responder's and the requester's bundles of fakes, the page helpers, the
//! local HTTP server), so there is one copy of each.

mod approval_store_only;
mod browser;
mod github_votes;
mod iam_denied;
#[path = "../../../../lambdas/approval-response/tests/it/pages.rs"]
mod pages;
mod plan_page;
#[path = "../../../../lambdas/approval-response/tests/it/ports.rs"]
mod ports;
#[path = "../../../../lambdas/approval-request/tests/fakes/mod.rs"]
mod requester_fakes;
mod responder;
mod round_trips;
#[path = "../../../../lambdas/approval-response/tests/it/server.rs"]
mod server;
mod ses_localstack;
mod vote_race;
