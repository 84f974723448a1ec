//! The chat-ops vote commands a voter writes on a merged pull request:
//! `/live-ci approve <unit>` and `/live-ci reject <unit> <reason>`. Like
//! `/live-ci plan`, a command counts only alone on the comment's first line:
//! a reply quoting a vote, or a summary listing a unit whose name embeds one,
//! must never cast a vote.

use crate::path::{RepoPath, is_unsafe_path_char};

/// The comment that approves a unit's deployment.
pub const APPROVE_COMMAND: &str = "/live-ci approve";
/// The comment that rejects a unit's deployment (a reason is required: the
/// deploying engineer reads why, as with a mailed rejection).
pub const REJECT_COMMAND: &str = "/live-ci reject";

/// What a vote says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VoteChoice {
    /// Approve the unit's deployment.
    Approve,
    /// Reject it.
    Reject {
        /// Why, as the voter wrote it after the unit (required).
        reason: String,
    },
}

/// A well-formed vote command read from a comment's first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoteCommand {
    /// The unit voted on.
    pub unit: RepoPath,
    /// Approve, or reject with a reason.
    pub choice: VoteChoice,
}

/// The vote in a comment's body: `None` when its first line is no vote command
/// at all, `Some(Err(why))` when it is one but malformed (the voter gets `why`
/// as a reply, so it names the offending value quoted), `Some(Ok(_))` otherwise.
pub fn vote_command(body: &str) -> Option<Result<VoteCommand, String>> {
    let line = body.split('\n').next()?.trim();
    let (command, rest) = [APPROVE_COMMAND, REJECT_COMMAND]
        .into_iter()
        .find_map(|c| {
            let rest = line.strip_prefix(c)?;
            // `/live-ci approved` is prose, not the command.
            (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some((c, rest))
        })?;
    let rest = rest.trim_start();
    let (unit, tail) = match rest.split_once(char::is_whitespace) {
        Some((unit, tail)) => (unit, tail.trim()),
        None => (rest, ""),
    };
    Some(parse(command, unit, tail))
}

fn parse(command: &str, unit: &str, tail: &str) -> Result<VoteCommand, String> {
    if unit.is_empty() {
        return Err(format!("{command:?} needs the unit's path"));
    }
    let unit = RepoPath::new(unit).map_err(|e| e.to_string())?;
    if unit.is_root() {
        return Err(format!("{command:?} needs a unit's path, not the root"));
    }
    let choice = if command == APPROVE_COMMAND {
        if !tail.is_empty() {
            return Err(format!(
                "{command:?} takes one unit path; {tail:?} follows {:?}",
                unit.as_str()
            ));
        }
        VoteChoice::Approve
    } else {
        if tail.is_empty() {
            return Err(format!(
                "{command:?} needs a reason after the unit: {REJECT_COMMAND} {} <reason>",
                unit.as_str()
            ));
        }
        // The reason reaches replies, the run page and logs; the same
        // characters a path may not hold may not hide in it either.
        if tail.chars().any(is_unsafe_path_char) {
            return Err(format!(
                "the reason {tail:?} holds a control or bidirectional-text character"
            ));
        }
        VoteChoice::Reject {
            reason: tail.to_string(),
        }
    };
    Ok(VoteCommand { unit, choice })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(body: &str) -> Option<Result<VoteCommand, String>> {
        vote_command(body)
    }

    #[test]
    fn approve_and_reject_parse_from_the_first_line_only() {
        assert_eq!(
            vote("/live-ci approve dev/app\nthanks"),
            Some(Ok(VoteCommand {
                unit: RepoPath::new("dev/app").unwrap(),
                choice: VoteChoice::Approve
            }))
        );
        assert_eq!(
            vote("  /live-ci reject ./dev//app  wrong  region \r\nmore"),
            Some(Ok(VoteCommand {
                unit: RepoPath::new("dev/app").unwrap(),
                choice: VoteChoice::Reject {
                    reason: "wrong  region".into()
                }
            }))
        );
        for not_a_vote in [
            "lgtm\n/live-ci approve dev/app",
            "> /live-ci approve dev/app",
            "/live-ci approved dev/app",
            "/live-ci plan",
            "",
        ] {
            assert_eq!(vote(not_a_vote), None, "{not_a_vote:?}");
        }
    }

    #[test]
    fn malformed_votes_are_refused_with_the_reason() {
        let refused = |body: &str| match vote(body) {
            Some(Err(why)) => why,
            other => panic!("{body:?}: {other:?}"),
        };
        assert_eq!(
            refused("/live-ci reject dev/app"),
            "\"/live-ci reject\" needs a reason after the unit: /live-ci reject dev/app <reason>"
        );
        assert_eq!(
            refused("/live-ci reject dev/app   "),
            "\"/live-ci reject\" needs a reason after the unit: /live-ci reject dev/app <reason>"
        );
        assert_eq!(
            refused("/live-ci approve"),
            "\"/live-ci approve\" needs the unit's path"
        );
        assert_eq!(
            refused("/live-ci approve ."),
            "\"/live-ci approve\" needs a unit's path, not the root"
        );
        assert_eq!(
            refused("/live-ci approve dev/app prod/app"),
            "\"/live-ci approve\" takes one unit path; \"prod/app\" follows \"dev/app\""
        );
        assert!(refused("/live-ci approve ../etc").contains("\"../etc\""));
        assert!(refused("/live-ci approve dev/\u{202E}ppa").contains("\\u{202e}"));
        assert!(refused("/live-ci approve dev/a\u{1b}[2Jb").contains("\\u{1b}"));
        assert!(
            refused("/live-ci reject dev/app bad\u{7}bell")
                .starts_with("the reason \"bad\\u{7}bell\" holds a control")
        );
    }
}
