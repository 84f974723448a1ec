//! The approval_request Lambda: for each voter of an execution waiting in
//! Request Approval, one e-mail (SES v2) with the unit, the plan summary, a
//! link to the plan's logs and that voter's own signed approve and reject
//! links. The task token is stored in the metadb for approval_response, which
//! receives only a link. The delivery that stores a request also publishes
//! "approval pending" to the notifications topic, when one is configured.
//! `main.rs` only wires clients into [`Production`] ports for
//! [`ApprovalRequester`]; tests hand it their own bundle ([`RequesterPorts`]).

mod config;
mod handler;
mod mail;
mod notify;
mod ports;

pub use config::{AWS_ACTIONS, Config, ConfigError, ENV_VARS, RequestSettings};
pub use handler::{
    ApprovalRequester, MAIL_REFUSED, MailReport, RequestError, parse_sns_event, refusal_cause,
};
pub use mail::{MailContext, render_email, vote_url};
pub use notify::approval_pending;
pub use ports::{Production, RequesterPorts};
