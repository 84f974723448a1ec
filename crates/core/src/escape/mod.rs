//! Escaping of user-controlled text (unit paths, error messages, anything from
//! the repository or a pull request) for each medium it is shown in: one
//! module per medium, each the only place that medium's escaping is done.
//! A hostile value must stay inert text: no markdown or HTML structure, no
//! second line (a chat-ops command, a mail header), no terminal control.

pub mod chat;
pub mod html;
pub mod markdown;
pub mod text;
