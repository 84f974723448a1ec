//! Routing of GitHub's deliveries, over the stored payload fixtures.
#![allow(clippy::unwrap_used)] // test set-up panics by design

use live_ci_core::webhook::{
    Route, TrustPolicy, WebhookError, route as route_with, sign, verify_signature,
};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/github/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const REPO: Option<&str> = Some("acme/infrastructure-live");

/// Routing under the module's default trust policy (OWNER, MEMBER, COLLABORATOR).
fn route(
    event: &str,
    body: &[u8],
    trunk: &str,
    repository: Option<&str>,
) -> Result<Route, WebhookError> {
    route_with(event, body, trunk, repository, &TrustPolicy::default(), BOT)
}

/// The login live-ci's own comments are made by, in these tests.
const BOT: Option<&str> = Some("live-ci-bot");

fn edited(file: &str, edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(&fixture(file)).unwrap();
    edit(&mut v);
    serde_json::to_vec(&v).unwrap()
}

const FORK_HEAD: &str = "e4d1a9c07b3f25d8e6a1c4b9f0d7e2a5c8b3f161";

#[test]
fn a_fork_pull_request_is_not_planned_and_says_how_to_get_a_plan() {
    let r = route(
        "pull_request",
        &fixture("pull_request_opened_fork.json"),
        "main",
        REPO,
    )
    .unwrap();
    assert_eq!(
        r,
        Route::NotPlanned {
            number: 43,
            head_sha: FORK_HEAD.into(),
            reason: "not planned: a maintainer comments \"/live-ci plan\" to plan it \
                     (its head is in the fork drive-by-dev/infrastructure-live)"
                .into(),
        }
    );
    // a trusted author association does not make a fork's code trusted
    let member_fork = edited("pull_request_opened_fork.json", |v| {
        v["pull_request"]["author_association"] = "OWNER".into();
    });
    assert!(matches!(
        route("pull_request", &member_fork, "main", REPO).unwrap(),
        Route::NotPlanned { .. }
    ));
    // nor does a fork whose repository was deleted since
    let deleted = edited("pull_request_opened_fork.json", |v| {
        v["pull_request"]["head"]["repo"] = serde_json::Value::Null;
    });
    let Route::NotPlanned { reason, .. } = route("pull_request", &deleted, "main", REPO).unwrap()
    else {
        panic!("a deleted fork's head was planned")
    };
    assert!(
        reason.ends_with("(its head repository was deleted)"),
        "{reason}"
    );
    // a fork's merged pull request deploys: the merge is the human gate
    let merged_fork = edited("pull_request_closed_merged.json", |v| {
        v["pull_request"]["head"]["repo"]["full_name"] = "drive-by-dev/infrastructure-live".into();
        v["pull_request"]["author_association"] = "NONE".into();
    });
    assert!(matches!(
        route("pull_request", &merged_fork, "main", REPO).unwrap(),
        Route::DeployMerge { number: 42, .. }
    ));
}

#[test]
fn only_configured_author_associations_are_planned() {
    for (association, planned) in [
        ("OWNER", true),
        ("MEMBER", true),
        ("COLLABORATOR", true),
        ("CONTRIBUTOR", false),
        ("FIRST_TIME_CONTRIBUTOR", false),
        ("NONE", false),
    ] {
        let body = edited("pull_request_synchronize.json", |v| {
            v["pull_request"]["author_association"] = association.into();
        });
        let r = route("pull_request", &body, "main", REPO).unwrap();
        assert_eq!(
            matches!(r, Route::PlanPullRequest { .. }),
            planned,
            "{association}: {r:?}"
        );
        if !planned {
            let Route::NotPlanned { reason, .. } = r else {
                panic!("{r:?}")
            };
            assert!(
                reason.ends_with(&format!(
                    "(author association {association:?} is not trusted)"
                )),
                "{reason}"
            );
        }
    }
    // the list is the module's: OWNER only leaves members unplanned
    let owners = TrustPolicy::new(&["OWNER"]).unwrap();
    let r = route_with(
        "pull_request",
        &fixture("pull_request_opened.json"),
        "main",
        REPO,
        &owners,
        BOT,
    )
    .unwrap();
    assert!(matches!(r, Route::NotPlanned { number: 42, .. }), "{r:?}");
}

#[test]
fn a_maintainers_plan_comment_asks_for_a_plan() {
    assert_eq!(
        route(
            "issue_comment",
            &fixture("issue_comment_plan.json"),
            "main",
            REPO
        )
        .unwrap(),
        Route::PlanRequested {
            number: 43,
            commenter: "octo-lead".into(),
            pinned_sha: None,
        }
    );
    let pinned = edited("issue_comment_plan.json", |v| {
        v["comment"]["body"] = format!(
            "/live-ci plan {}\nreviewed, looks safe",
            FORK_HEAD.to_uppercase()
        )
        .into();
    });
    assert!(matches!(
        route("issue_comment", &pinned, "main", REPO).unwrap(),
        Route::PlanRequested { pinned_sha: Some(s), .. } if s == FORK_HEAD
    ));
    let ignored = |edit: &dyn Fn(&mut serde_json::Value)| {
        let body = edited("issue_comment_plan.json", edit);
        match route("issue_comment", &body, "main", REPO).unwrap() {
            Route::Ignore(reason) => reason,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        ignored(&|v| v["comment"]["author_association"] = "CONTRIBUTOR".into()),
        "\"octo-lead\" (CONTRIBUTOR) cannot have write access; only maintainers may ask for a plan"
    );
    assert_eq!(
        ignored(&|v| v["action"] = "edited".into()),
        "issue_comment action \"edited\" asks for nothing"
    );
    assert_eq!(
        ignored(&|v| {
            v["issue"].as_object_mut().unwrap().remove("pull_request");
        }),
        "issue #43 is not a pull request"
    );
    assert_eq!(
        ignored(&|v| v["comment"]["body"] = "please plan this".into()),
        "the comment on pull request #43 does not start with a \"/live-ci plan\" line"
    );
    // the command must be alone on the first line; a pin is the full commit id
    for body in [
        "reviewed, looks safe\n/live-ci plan".to_string(),
        "/live-ci plan E4D1A9C".to_string(),
        format!("/live-ci plan {FORK_HEAD} please"),
    ] {
        assert_eq!(
            ignored(&|v| v["comment"]["body"] = body.clone().into()),
            "the comment on pull request #43 does not start with a \"/live-ci plan\" line",
            "{body:?}"
        );
    }
    assert!(
        ignored(&|v| v["repository"]["full_name"] = "acme/other".into())
            .contains("is not the configured")
    );
    let err = route("issue_comment", b"{\"action\": \"created\"}", "main", REPO).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("malformed \"issue_comment\" payload"),
        "{err}"
    );
}

/// live-ci's own summary comment, naming a unit whose path smuggles a command
/// (`x\n/live-ci plan\ny`, were such a path accepted), never asks for a plan:
/// the bot's comments are ignored by login, any bot's by the payload's user
/// type, whatever their body says.
#[test]
fn the_bots_own_comments_are_never_commands() {
    let by = |login: &str, kind: &str| {
        let body = edited("issue_comment_plan.json", |v| {
            v["comment"]["user"]["login"] = login.into();
            v["comment"]["user"]["type"] = kind.into();
            v["comment"]["body"] = "/live-ci plan".into();
        });
        route("issue_comment", &body, "main", REPO).unwrap()
    };
    assert_eq!(
        by("live-ci-bot", "User"),
        Route::Ignore("the comment on pull request #43 is live-ci's own (\"live-ci-bot\")".into())
    );
    assert_eq!(
        by("Live-CI-Bot", "User"),
        Route::Ignore("the comment on pull request #43 is live-ci's own (\"Live-CI-Bot\")".into())
    );
    assert_eq!(
        by("live-ci[bot]", "Bot"),
        Route::Ignore("the comment on pull request #43 is by the bot \"live-ci[bot]\"".into())
    );
    // the same comment by a maintainer is a request
    assert!(matches!(
        by("octo-lead", "User"),
        Route::PlanRequested { .. }
    ));
    // and without a known bot login, only the user type protects
    let body = edited("issue_comment_plan.json", |v| {
        v["comment"]["user"]["login"] = "live-ci-bot".into();
    });
    assert!(matches!(
        route_with(
            "issue_comment",
            &body,
            "main",
            REPO,
            &TrustPolicy::default(),
            None
        )
        .unwrap(),
        Route::PlanRequested { .. }
    ));
}

#[test]
fn opened_and_synchronize_plan_the_head_commit() {
    let r = route(
        "pull_request",
        &fixture("pull_request_opened.json"),
        "main",
        REPO,
    )
    .unwrap();
    assert_eq!(
        r,
        Route::PlanPullRequest {
            number: 42,
            head_sha: "16b7537a0e4f8c2d9b3a61e5f70c48d2a9be31c4".into(),
            head_ref: "feature/bigger-vpc".into(),
            base_ref: "main".into(),
            html_url: "https://github.com/acme/infrastructure-live/pull/42".into(),
        }
    );
    // a new push plans the new head commit, not the old one
    let r = route(
        "pull_request",
        &fixture("pull_request_synchronize.json"),
        "main",
        REPO,
    )
    .unwrap();
    let Route::PlanPullRequest { head_sha, .. } = r else {
        panic!("{r:?}")
    };
    assert_eq!(head_sha, "9c2f41e88a07d3b6e15c0f2a7d94b83e6c1f05d2");
}

#[test]
fn merged_pull_request_deploys_the_merge_commit() {
    let r = route(
        "pull_request",
        &fixture("pull_request_closed_merged.json"),
        "main",
        REPO,
    )
    .unwrap();
    assert_eq!(
        r,
        Route::DeployMerge {
            number: 42,
            merge_commit_sha: "6cb93bbc4422b29f88bf7c85311e1b0657191c39".into(),
            base_ref: "main".into(),
            base_sha: "1e7bc7d6f5b4a39281706f2c4b1ea9d3c8e05a17".into(),
            head_ref: "feature/bigger-vpc".into(),
            head_sha: "9c2f41e88a07d3b6e15c0f2a7d94b83e6c1f05d2".into(),
            html_url: "https://github.com/acme/infrastructure-live/pull/42".into(),
        }
    );
}

#[test]
fn everything_else_is_ignored_with_a_reason() {
    let ignored =
        |event: &str, file: &str, trunk: &str| match route(event, &fixture(file), trunk, REPO)
            .unwrap()
        {
            Route::Ignore(reason) => reason,
            other => panic!("{file}: {other:?}"),
        };
    assert_eq!(
        ignored("pull_request", "pull_request_closed_unmerged.json", "main"),
        "pull request #42 was closed without merging"
    );
    assert_eq!(
        ignored("pull_request", "pull_request_other_base.json", "main"),
        "pull request #42 targets \"release/2026-q4\", not the trunk \"main\""
    );
    assert!(ignored("pull_request", "pull_request_draft.json", "main").contains("draft"));
    assert_eq!(
        ignored("push", "push.json", "main"),
        "event \"push\" is not handled"
    );
    // the trunk is configurable
    assert!(
        ignored("pull_request", "pull_request_opened.json", "master")
            .contains("not the trunk \"master\"")
    );
    assert_eq!(
        route("ping", &fixture("ping.json"), "main", REPO).unwrap(),
        Route::Ping
    );
    let other_repo = route(
        "pull_request",
        &fixture("pull_request_opened.json"),
        "main",
        Some("acme/other"),
    )
    .unwrap();
    assert!(matches!(other_repo, Route::Ignore(r) if r.contains("\"acme/infrastructure-live\"")));
}

#[test]
fn malformed_payloads_are_errors() {
    let err = route("pull_request", b"{\"action\": \"opened\"}", "main", REPO).unwrap_err();
    assert!(matches!(err, WebhookError::MalformedPayload { .. }));
    assert!(err.to_string().contains("missing field"), "{err}");
    let mut merged: serde_json::Value =
        serde_json::from_slice(&fixture("pull_request_closed_merged.json")).unwrap();
    merged["pull_request"]["merge_commit_sha"] = serde_json::Value::Null;
    let err = route(
        "pull_request",
        &serde_json::to_vec(&merged).unwrap(),
        "main",
        REPO,
    )
    .unwrap_err();
    assert!(err.to_string().contains("no merge_commit_sha"), "{err}");
}

#[test]
fn fixture_signatures_round_trip() {
    let body = fixture("pull_request_synchronize.json");
    let header = sign(b"webhook-secret", &body);
    assert_eq!(
        verify_signature(b"webhook-secret", &body, Some(&header)),
        Ok(())
    );
}

/// A voter's `/live-ci approve <unit>` on a merged pull request is a vote by
/// the login GitHub signed into the delivery; a reject carries its reason.
#[test]
fn a_vote_on_a_merged_pull_request_names_the_signed_login_and_the_unit() {
    use live_ci_core::RepoPath;
    use live_ci_core::webhook::VoteChoice;
    assert_eq!(
        route(
            "issue_comment",
            &fixture("issue_comment_vote.json"),
            "main",
            REPO
        )
        .unwrap(),
        Route::Vote {
            number: 43,
            comment_id: 2501234567,
            voter: "octo-lead".into(),
            unit: RepoPath::new("dev/app").unwrap(),
            choice: VoteChoice::Approve,
        }
    );
    // votes are not a maintainer's privilege: the voter list decides, so a
    // contributor's vote is routed (and checked against the list later)
    let body = edited("issue_comment_vote.json", |v| {
        v["comment"]["body"] =
            "/live-ci reject dev/app opens the bucket to the world\nsee the plan".into();
        v["comment"]["author_association"] = "CONTRIBUTOR".into();
    });
    assert_eq!(
        route("issue_comment", &body, "main", REPO).unwrap(),
        Route::Vote {
            number: 43,
            comment_id: 2501234567,
            voter: "octo-lead".into(),
            unit: RepoPath::new("dev/app").unwrap(),
            choice: VoteChoice::Reject {
                reason: "opens the bucket to the world".into()
            },
        }
    );
}

#[test]
fn votes_on_unmerged_pull_requests_and_malformed_votes_are_refused_with_a_reply() {
    let routed = |edit: &dyn Fn(&mut serde_json::Value)| {
        route(
            "issue_comment",
            &edited("issue_comment_vote.json", edit),
            "main",
            REPO,
        )
        .unwrap()
    };
    let refused = |reply: &str| Route::VoteRefused {
        number: 43,
        voter: "octo-lead".into(),
        reply: reply.into(),
    };
    let unmerged = "pull request #43 is not merged; votes count on a merged pull request whose deployment awaits approval";
    assert_eq!(
        routed(&|v| v["issue"]["pull_request"]["merged_at"] = serde_json::Value::Null),
        refused(unmerged)
    );
    assert_eq!(
        routed(&|v| {
            v["issue"]["pull_request"]
                .as_object_mut()
                .unwrap()
                .remove("merged_at");
        }),
        refused(unmerged)
    );
    assert_eq!(
        routed(&|v| v["comment"]["body"] = "/live-ci reject dev/app".into()),
        refused(
            "\"/live-ci reject\" needs a reason after the unit: /live-ci reject dev/app <reason>"
        )
    );
    match routed(&|v| v["comment"]["body"] = "/live-ci approve dev/\u{202E}ppa".into()) {
        Route::VoteRefused { reply, .. } => assert!(reply.contains("\\u{202e}"), "{reply}"),
        other => panic!("{other:?}"),
    }
}

/// Edits and deletions of a vote comment do nothing (a vote is changed by a
/// new comment, which the tally treats as the same voter's new choice); the
/// bot's own comments and any bot's are never votes; a quoted vote is none.
#[test]
fn edited_deleted_quoted_and_bot_vote_comments_do_nothing() {
    let ignored = |edit: &dyn Fn(&mut serde_json::Value)| match route(
        "issue_comment",
        &edited("issue_comment_vote.json", edit),
        "main",
        REPO,
    )
    .unwrap()
    {
        Route::Ignore(reason) => reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        ignored(&|v| v["action"] = "edited".into()),
        "issue_comment action \"edited\" asks for nothing"
    );
    assert_eq!(
        ignored(&|v| v["action"] = "deleted".into()),
        "issue_comment action \"deleted\" asks for nothing"
    );
    assert_eq!(
        ignored(&|v| v["comment"]["user"]["login"] = "Live-CI-Bot".into()),
        "the comment on pull request #43 is live-ci's own (\"Live-CI-Bot\")"
    );
    assert_eq!(
        ignored(&|v| {
            v["comment"]["user"]["login"] = "deploy[bot]".into();
            v["comment"]["user"]["type"] = "Bot".into();
        }),
        "the comment on pull request #43 is by the bot \"deploy[bot]\""
    );
    assert_eq!(
        ignored(&|v| v["comment"]["body"] = "> /live-ci approve dev/app\nagreed".into()),
        "the comment on pull request #43 does not start with a \"/live-ci plan\" line"
    );
}

proptest::proptest! {
    /// Whatever follows the command, a routed vote's unit is a valid path
    /// without control or bidi characters, and a reject always has a reason.
    #[test]
    fn any_first_line_routes_to_a_clean_vote_or_no_vote(
        cmd in proptest::sample::select(vec!["approve", "reject"]),
        rest in "[ -~\u{0}-\u{1f}\u{202a}-\u{202e}é]{0,40}",
    ) {
        let body = edited("issue_comment_vote.json", |v| {
            v["comment"]["body"] = format!("/live-ci {cmd} {rest}").into();
        });
        match route("issue_comment", &body, "main", REPO).unwrap() {
            Route::Vote { unit, choice, .. } => {
                proptest::prop_assert!(!unit.as_str().is_empty());
                proptest::prop_assert!(!unit.as_str().chars().any(live_ci_core::path::is_unsafe_path_char));
                if let live_ci_core::webhook::VoteChoice::Reject { reason } = choice {
                    proptest::prop_assert!(!reason.trim().is_empty());
                    proptest::prop_assert!(!reason.chars().any(live_ci_core::path::is_unsafe_path_char));
                }
            }
            Route::VoteRefused { .. } | Route::Ignore(_) => {}
            other => proptest::prop_assert!(false, "{:?}", other),
        }
    }
}
