//! E-mail approval: the signed vote links (`link`), the signed run-page links
//! (`run_link`) and the small time
//! formatting mails and pages show (`time`); their HTML escaping is
//! [`crate::escape::html`], re-exported here. Pure: the key arrives as bytes,
//! the clock as an argument.

mod link;
mod run_link;
mod time;

pub use crate::escape::html::{escape_html, is_web_url};
pub use link::{
    LinkError, LinkKey, MIN_KEY_BYTES, TOKEN_HASH_BYTES, VoteLink, task_token_hash,
    task_token_hash_hex,
};
pub use run_link::{RUN_LINK_TTL_SECS, RunLink, RunLinkKey, RunPages, run_page_url};
pub use time::format_utc;
