//! E-mail approval: the signed vote links (`link`), the HTML escaping every
//! mail and page uses (`html`), and the small time formatting they show
//! (`time`). Pure: the key arrives as bytes, the clock as an argument.

mod html;
mod link;
mod time;

pub use html::{escape_html, is_web_url};
pub use link::{
    LinkError, LinkKey, MIN_KEY_BYTES, TOKEN_HASH_BYTES, VoteLink, task_token_hash,
    task_token_hash_hex,
};
pub use time::format_utc;
