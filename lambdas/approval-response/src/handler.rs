//! The handler: verify the signed link, then show (GET) or record (POST).
//!
//! | outcome | status |
//! |---|---|
//! | no token | 400 |
//! | bad signature, malformed or expired link | 403 |
//! | signer is not one of the execution's voters | 403 |
//! | unknown execution | 404 |
//! | method other than GET, HEAD, POST | 405 |
//! | not awaiting approval (decided, ended, expired, superseded link) | 410 |
//! | a POST body that is not form-encoded | 415 |
//! | GET: the confirmation page; POST: vote recorded or decision sent | 200 |
//! | Step Functions no longer waits for the token (`TokenDelivery::Gone`) | 410, said on the page |
//! | a port failed and retrying may help (throttled, unreachable) | 503, said on the page |
//! | a port refused the request (it fails the same way again) | 502, said on the page |
//!
//! The task token is stored only encrypted, bound to its execution; it is
//! decrypted just before `SendTaskSuccess` and checked against the hash the
//! links carry, so a ciphertext copied from another execution (or an older
//! request) is refused and never sent. Neither the token nor its plaintext
//! reaches a page or a log line.
//!
//! A decision is handed to Step Functions by exactly one caller: `decide`
//! flips the execution's decision once, and the delivery claim in the
//! approval store lets one caller send it (a caller that died mid-send is
//! replaced after the lease, by the next POST of any voter).
//!
//! Each metadb call is a Data API round trip on the unit's path, so a GET is
//! one read ([`ApprovalStore::vote_view`]) and a POST one call before
//! `SendTaskSuccess` ([`ApprovalStore::vote`]: the store applies the same
//! refusals as [`ApprovalResponder`] before it records anything), plus the
//! record of the delivery after it.

use live_ci_core::approval::{LinkError, LinkKey, RunLinkKey, VoteLink, task_token_hash_hex};
use live_ci_core::deploy::{ExecutionRecord, ExecutionStatus, Tally, Vote};
use live_ci_core::plan_view;
use live_ci_core::port::{
    ApprovalRecord, ApprovalStore, ArtifactStore, Ballot, Cast, ErrorKind, PortError,
    PortResultExt, TaskTokens, TokenCipher, TokenDelivery, VoteChannel, VoteView,
};
use live_ci_stepfunctions::{ApprovalDecision, Decision};

use crate::http::{PageRequest, PageResponse};
use crate::page;
use crate::ports::ResponderPorts;

/// How long a decision hand-over may take before another caller retries it.
pub(crate) const DELIVERY_LEASE_SECS: u32 = 30;

/// The handler with its ports ([`ResponderPorts`]); built once per cold start.
#[derive(Debug)]
pub struct ApprovalResponder<Ports> {
    key: LinkKey,
    ports: Ports,
    /// Verifies run links (the read-only run page); `None`: no run page.
    run_key: Option<RunLinkKey>,
}

impl<Ports> ApprovalResponder<Ports> {
    /// Verifies vote links under `key` and acts through `ports`; no run page
    /// until [`with_run_key`](Self::with_run_key).
    pub fn new(key: LinkKey, ports: Ports) -> Self {
        ApprovalResponder {
            key,
            ports,
            run_key: None,
        }
    }

    /// The same handler, serving the read-only run page to links signed
    /// under `key` (parameter `r`).
    pub fn with_run_key(mut self, key: RunLinkKey) -> Self {
        self.run_key = Some(key);
        self
    }
}

/// Units the run page lists at most: one Data API answer (1 MiB) holds them.
pub(crate) const RUN_PAGE_UNITS: u32 = 400;

fn respond(status: u16, body: String) -> PageResponse {
    PageResponse {
        status,
        headers: vec![
            ("content-type", "text/html; charset=utf-8".into()),
            // The page shows live state and carries a token: never cached.
            ("cache-control", "no-store, max-age=0".into()),
            ("pragma", "no-cache".into()),
            // The URL holds the token: links out (the logs) must not leak it.
            ("referrer-policy", "no-referrer".into()),
            ("x-content-type-options", "nosniff".into()),
            ("x-frame-options", "DENY".into()),
            (
                "content-security-policy",
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
                 frame-ancestors 'none'; base-uri 'none'"
                    .into(),
            ),
        ],
        body,
    }
}

fn message(status: u16, title: &str, class: &str, text: &str) -> PageResponse {
    respond(status, page::message(title, class, text))
}

/// Why a request stopped before its normal answer: a refusal the page
/// explains, or a port that failed.
enum Stop {
    Page(PageResponse),
    Port(PortError),
}

impl From<PageResponse> for Stop {
    fn from(page: PageResponse) -> Stop {
        Stop::Page(page)
    }
}

impl From<PortError> for Stop {
    fn from(e: PortError) -> Stop {
        Stop::Port(e)
    }
}

/// The one answer to a failed port, by its kind: 503 when trying again may
/// help, 502 when the port refused the request itself.
fn port_failed(e: &PortError) -> PageResponse {
    tracing::error!(error = %e, port = e.port(), kind = ?e.kind(), "port failed");
    let port = e.port();
    match e.kind() {
        ErrorKind::Retryable => message(
            503,
            "Try again shortly",
            "bad",
            &format!(
                "The {port} could not be reached; nothing changed by this request unless said otherwise. Reload to try again."
            ),
        ),
        ErrorKind::Permanent => message(
            502,
            "Request failed",
            "bad",
            &format!(
                "The {port} refused the request; nothing changed by this request unless said otherwise. Trying again will not help: an operator must look at it."
            ),
        ),
    }
}

/// Why the stored task token cannot be sent. Never holds the token.
#[derive(Debug, thiserror::Error)]
enum TokenProblem {
    #[error("no task token ciphertext (a request stored before migration 0006)")]
    NoCiphertext,
    #[error(transparent)]
    Cipher(#[from] PortError),
    #[error("the decrypted task token does not match the stored hash {0:?}")]
    HashMismatch(String),
}

/// Everything a verified link is checked against, and when it was checked.
struct Context {
    link: VoteLink,
    token: String,
    execution: ExecutionRecord,
    approval: ApprovalRecord,
    /// The votes as read with the execution.
    tally: Tally,
    /// The recorded plan's policy denials (`policy_override`): shown, and an
    /// approve needs a reason.
    policy_denials: Vec<String>,
    now_ms: i64,
}

impl Context {
    /// The same request, seeing `approval` as it is now.
    fn with_approval(&self, approval: ApprovalRecord) -> Context {
        Context {
            approval,
            link: self.link.clone(),
            token: self.token.clone(),
            execution: self.execution.clone(),
            tally: self.tally.clone(),
            policy_denials: self.policy_denials.clone(),
            now_ms: self.now_ms,
        }
    }
}

/// What became of a decided vote's hand-over of the task token.
pub(crate) enum HandOver {
    /// Another caller holds the claim: it sends (or sent) the decision.
    NotOurs,
    /// Sent; what Step Functions said.
    Sent(TokenDelivery),
    /// Nothing was sent and retrying will not help: why.
    Refused(&'static str),
    /// Step Functions could not be reached; the claim stays for its lease.
    Unreachable,
}

/// The votes decided but nothing was sent, and retrying will not help.
fn not_delivered(id: &str, decision: Vote, why: &str) -> PageResponse {
    message(
        502,
        "Decision not delivered",
        "bad",
        &format!(
            "The votes decided to {}, but {why}, so nothing was sent to Step Functions. An \
             operator must look at execution {id}.",
            decision.as_str()
        ),
    )
}

impl<Ports: ResponderPorts> ApprovalResponder<Ports> {
    /// The metadb (votes from the pull request use it too).
    pub(crate) fn db(&self) -> &Ports::Db {
        self.ports.db()
    }

    /// GitHub, for votes from the pull request (`None`: they are off).
    pub(crate) fn github(&self) -> Option<&Ports::GitHub> {
        self.ports.github()
    }

    /// Handles one request at `now` (Unix milliseconds). Never panics and
    /// never fails: every outcome is a page saying what happened.
    pub async fn handle(&self, req: &PageRequest, now_ms: i64) -> PageResponse {
        let method = req.method.to_ascii_uppercase();
        let post = match method.as_str() {
            "GET" | "HEAD" => false,
            "POST" => true,
            _ => {
                let mut resp = message(
                    405,
                    "Method not allowed",
                    "bad",
                    &format!(
                        "Method {:?} is not allowed: open the link (GET) and press the button (POST).",
                        req.method
                    ),
                );
                resp.headers.push(("allow", "GET, HEAD, POST".into()));
                return resp;
            }
        };
        let mut resp = match req.query_param("r").filter(|r| !r.is_empty()) {
            Some(run_token) => self.run_link(&run_token, post, now_ms).await,
            None => self.vote_link(req, post, now_ms).await,
        };
        if method == "HEAD" {
            resp.body.clear();
        }
        resp
    }

    /// A run link: the read-only run page, never a vote.
    async fn run_link(&self, run_token: &str, post: bool, now_ms: i64) -> PageResponse {
        if post {
            let mut resp = message(
                405,
                "Method not allowed",
                "bad",
                "A run page is read-only: it can only be opened (GET).",
            );
            resp.headers.push(("allow", "GET, HEAD".into()));
            return resp;
        }
        match self.run_page(run_token, now_ms).await {
            Ok(resp) | Err(Stop::Page(resp)) => resp,
            Err(Stop::Port(e)) => port_failed(&e),
        }
    }

    /// A vote link: its confirmation page (GET), or the vote (POST, a form).
    async fn vote_link(&self, req: &PageRequest, post: bool, now_ms: i64) -> PageResponse {
        if post {
            let form = req.header("content-type").map(|c| {
                c.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase()
            });
            if form
                .as_deref()
                .is_some_and(|c| c != "application/x-www-form-urlencoded")
            {
                return message(
                    415,
                    "Unsupported form",
                    "bad",
                    "The vote must be posted as application/x-www-form-urlencoded.",
                );
            }
        }
        // A POST carries the signed token in its body (the form's hidden
        // field): it is its own CSRF protection, as no other site can sign one.
        let token = if post {
            req.form_field("t").or_else(|| req.query_param("t"))
        } else {
            req.query_param("t")
        };
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            return message(
                400,
                "No vote link",
                "bad",
                "This address needs the link from your approval e-mail (parameter t is missing).",
            );
        };
        let answer = match self.verify(&token, now_ms) {
            Ok(link) if post => {
                let reason = req.form_field("reason");
                self.vote(link, token, reason.as_deref(), now_ms).await
            }
            Ok(link) => self.show(link, token, now_ms).await,
            Err(stop) => Err(stop),
        };
        match answer {
            Ok(resp) | Err(Stop::Page(resp)) => resp,
            Err(Stop::Port(e)) => port_failed(&e),
        }
    }

    /// GET with a run link: the read-only run page. Verified under the
    /// run-link key only, so a vote link never opens it (and a run link never
    /// votes: the vote path verifies under the vote-link key).
    async fn run_page(&self, token: &str, now_ms: i64) -> Result<PageResponse, Stop> {
        let Some(key) = &self.run_key else {
            return Err(Stop::Page(message(
                404,
                "No run pages",
                "bad",
                "This approval service does not serve run pages.",
            )));
        };
        let now = u64::try_from(now_ms / 1000).unwrap_or(0);
        let link = match key.verify(token, now) {
            Ok(link) => link,
            Err(LinkError::Expired { expired_at }) => {
                return Err(Stop::Page(message(
                    403,
                    "Link expired",
                    "bad",
                    &format!(
                        "This run link expired at {}; open the run from the pull request again.",
                        live_ci_core::approval::format_utc(expired_at)
                    ),
                )));
            }
            Err(err) => {
                tracing::warn!(error = %err, "refused run link");
                return Err(Stop::Page(message(
                    403,
                    "Invalid link",
                    "bad",
                    "This run link is not valid. Use the link from the pull request exactly as shown.",
                )));
            }
        };
        let Some(view) = self
            .ports
            .db()
            .run_view(link.run_id, RUN_PAGE_UNITS)
            .await
            .port("metadb")?
        else {
            return Err(Stop::Page(message(
                404,
                "Unknown run",
                "bad",
                &format!("No run {} is known.", link.run_id),
            )));
        };
        let mut resp = respond(200, page::run(&view, now_ms, RUN_PAGE_UNITS));
        // Nothing on this page is a form: no form may be posted from it.
        for (name, value) in &mut resp.headers {
            if *name == "content-security-policy" {
                *value = "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; \
                          frame-ancestors 'none'; base-uri 'none'"
                    .into();
            }
        }
        Ok(resp)
    }

    /// Verifies the link's signature and expiry; every refusal is a page.
    fn verify(&self, token: &str, now_ms: i64) -> Result<VoteLink, Stop> {
        let now = u64::try_from(now_ms / 1000).unwrap_or(0);
        match self.key.verify(token, now) {
            Ok(link) => Ok(link),
            Err(LinkError::Expired { expired_at }) => Err(Stop::Page(message(
                403,
                "Link expired",
                "bad",
                &format!(
                    "This vote link expired at {}; the approval timeout has passed.",
                    live_ci_core::approval::format_utc(expired_at)
                ),
            ))),
            Err(err) => {
                tracing::warn!(error = %err, "refused vote link");
                Err(Stop::Page(message(
                    403,
                    "Invalid link",
                    "bad",
                    "This vote link is not valid. Use the link from your approval e-mail exactly as sent.",
                )))
            }
        }
    }

    /// Checks a verified link against what it refers to (`None`: an unknown
    /// execution); every refusal is a page. The store's `vote` refuses the
    /// same links before it records anything.
    fn context(
        &self,
        link: VoteLink,
        token: String,
        view: Option<VoteView>,
        now_ms: i64,
    ) -> Result<Context, Stop> {
        let Some(VoteView {
            execution,
            approval,
            tally,
            policy_denials,
        }) = view
        else {
            return Err(Stop::Page(message(
                404,
                "Unknown deployment",
                "bad",
                &format!("No execution {:?} is known.", link.execution_id),
            )));
        };
        if !execution.voters.contains(&link.voter) {
            return Err(Stop::Page(message(
                403,
                "Not a voter",
                "bad",
                &format!(
                    "{} is not one of the voters of this deployment.",
                    link.voter
                ),
            )));
        }
        let Some(approval) = approval else {
            return Err(Stop::Page(message(
                410,
                "Not awaiting approval",
                "warn",
                "This deployment is not waiting for approval.",
            )));
        };
        if approval.task_token_hash != link.task_token_hash_hex() {
            return Err(Stop::Page(message(
                410,
                "Superseded link",
                "warn",
                "This link belongs to an earlier approval request of this deployment; use the most recent e-mail.",
            )));
        }
        Ok(Context {
            link,
            token,
            execution,
            approval,
            tally,
            policy_denials,
            now_ms,
        })
    }

    /// Why voting is closed, if it is.
    fn closed(&self, ctx: &Context) -> Option<PageResponse> {
        let e = &ctx.execution;
        if e.decision.is_some() || ctx.approval.decision_sent_at.is_some() {
            return None; // shown by the decision path
        }
        if ctx.approval.task_token_ciphertext.is_none() {
            return Some(message(
                410,
                "Request cannot be answered",
                "warn",
                "This approval request was stored before task tokens were encrypted and its \
                 token was dropped on upgrade, so no vote can complete it. It times out; an \
                 operator then retries the run (live-ci retry) and everyone is mailed anew.",
            ));
        }
        if e.status != ExecutionStatus::Running {
            return Some(message(
                410,
                "Not awaiting approval",
                "warn",
                &format!(
                    "This deployment is no longer waiting for approval (it is {}).",
                    e.status.as_str()
                ),
            ));
        }
        None
    }

    /// GET: the confirmation page; changes nothing.
    async fn show(&self, link: VoteLink, token: String, now_ms: i64) -> Result<PageResponse, Stop> {
        // The plan is read beside the view (one round trip each, at once);
        // shown only if the link holds.
        let (view, plan) = tokio::join!(
            self.ports.db().vote_view(&link.execution_id),
            self.plan_section(&link.execution_id)
        );
        let view = view.port("metadb")?;
        let ctx = self.context(link, token, view, now_ms)?;
        if let Some(resp) = self.closed(&ctx) {
            return Ok(resp);
        }
        if let Some(decision) = ctx.execution.decision {
            return Ok(self.decided_page(&ctx, &ctx.tally, decision, 410));
        }
        Ok(respond(
            200,
            page::confirm(
                &ctx.execution,
                &ctx.approval,
                &ctx.tally,
                &ctx.link.voter,
                ctx.link.vote,
                &ctx.token,
                &plan,
                &ctx.policy_denials,
            ),
        ))
    }

    /// The saved plan of the execution as HTML: rendered only from JSON
    /// that hashes to what the plan task recorded with the plan the apply
    /// checks (`plan_view::open`); otherwise a notice saying why it is not
    /// shown. Never fails the page: the voter may still reject.
    async fn plan_section(&self, execution_id: &str) -> String {
        let refused = |why: &str| page::plan_refused(why);
        let Some(plans) = self.ports.plans() else {
            return refused("this approval page has no access to the plan store");
        };
        let saved = match self.ports.db().voted_plan(execution_id).await {
            Ok(Some(saved)) => saved,
            Ok(None) => return refused("no saved plan is recorded for this deployment"),
            Err(e) => {
                tracing::error!(error = %e, execution = %execution_id, "reading the saved plan failed");
                return refused("the saved plan's record could not be read; reload to try again");
            }
        };
        let bytes = match plans.get(&plan_view::json_key(&saved.key)).await {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::error!(error = %e, execution = %execution_id, "reading the plan JSON failed");
                return refused("the stored plan JSON could not be read; reload to try again");
            }
        };
        match plan_view::open(&saved, bytes.as_deref()) {
            Ok(view) => view.to_html(),
            Err(why) => {
                tracing::warn!(execution = %execution_id, problem = %why, "plan JSON not shown");
                refused(&why.to_string())
            }
        }
    }

    /// POST: record the vote (with the form's `reason`), decide, hand the
    /// decision over.
    async fn vote(
        &self,
        link: VoteLink,
        token: String,
        reason: Option<&str>,
        now_ms: i64,
    ) -> Result<PageResponse, Stop> {
        let hash = link.task_token_hash_hex();
        let voted = self
            .ports
            .db()
            .vote(&Ballot {
                execution_id: &link.execution_id,
                voter: &link.voter,
                channel: VoteChannel::Mail,
                vote: link.vote,
                task_token_hash: &hash,
                lease_secs: DELIVERY_LEASE_SECS,
                reason: reason.map(str::trim).filter(|r| !r.is_empty()),
                github_login: None,
            })
            .await
            .port("metadb")?;
        let (view, cast, reason_required) = match voted {
            Some(voted) => (Some(voted.view), voted.cast, voted.reason_required),
            None => (None, None, false),
        };
        let ctx = self.context(link, token, view, now_ms)?;
        if let Some(resp) = self.closed(&ctx) {
            return Ok(resp);
        }
        if reason_required {
            // The store refused it under the execution's lock: nothing is
            // recorded, and the voter may post again with a reason.
            return Ok(message(
                422,
                "A reason is required",
                "bad",
                &format!(
                    "The policies denied this plan of {:?}: approving it needs a reason (the \
                     page's reason field). Nothing was recorded; open the link again to vote \
                     with one.",
                    ctx.execution.cfg_path.as_str()
                ),
            ));
        }
        let Some(cast) = cast else {
            // The store refused what the view above let through: it read the
            // same row under its lock, so this is a store that disagrees.
            tracing::error!(execution = %ctx.execution.execution_id, "the store refused a vote the page accepts");
            return Ok(message(
                410,
                "Not awaiting approval",
                "warn",
                "This deployment is not waiting for approval.",
            ));
        };
        let Some(decision) = cast.decision else {
            if !cast.recorded {
                return Ok(message(
                    410,
                    "Not awaiting approval",
                    "warn",
                    &format!(
                        "This deployment is no longer waiting for approval (it is {}).",
                        cast.status.as_str()
                    ),
                ));
            }
            return Ok(respond(
                200,
                page::recorded(
                    &ctx.execution,
                    &ctx.approval,
                    &cast.tally,
                    &ctx.link.voter,
                    ctx.link.vote,
                ),
            ));
        };
        // A vote that came after the decision gets 410: it changed nothing;
        // a decision whose hand-over failed is retried here all the same.
        let status = if cast.recorded { 200 } else { 410 };
        self.deliver(&ctx, cast, decision, status).await
    }

    /// Sends the decision if this caller wins the hand-over, then says what
    /// became of it.
    async fn deliver(
        &self,
        ctx: &Context,
        cast: Cast,
        decision: Vote,
        status: u16,
    ) -> Result<PageResponse, Stop> {
        let id = &ctx.execution.execution_id;
        let tally = &cast.tally;
        // The request as it is after the claim: with a newer task token if a
        // newer request replaced it, or with the delivery someone else made.
        let current = cast
            .approval
            .clone()
            .unwrap_or_else(|| ctx.approval.clone());
        match self.hand_over(id, &cast, &current, decision).await {
            // Someone else sends (or sent) it: show what is known.
            HandOver::NotOurs => {
                Ok(self.decided_page(&ctx.with_approval(current), tally, decision, status))
            }
            HandOver::Refused(why) => Ok(not_delivered(id, decision, why)),
            HandOver::Unreachable => Ok(message(
                502,
                "Decision not yet delivered",
                "bad",
                &format!(
                    "The votes decided to {}, but Step Functions could not be reached. Submit your vote again in {} seconds to retry.",
                    decision.as_str(),
                    DELIVERY_LEASE_SECS
                ),
            )),
            HandOver::Sent(delivery) => {
                let mut approval = ctx.approval.clone();
                approval.delivery = Some(delivery);
                approval.decision_sent_at = Some(ctx.now_ms);
                Ok(self.decided_page(&ctx.with_approval(approval), tally, decision, status))
            }
        }
    }

    /// The hand-over of a decided vote, for a mailed vote's page and a vote
    /// from the pull request alike: when `cast` holds the claim, the decision
    /// is encoded, the task token of `current` decrypted and checked, sent
    /// with `SendTaskSuccess`, and what Step Functions said recorded.
    pub(crate) async fn hand_over(
        &self,
        id: &str,
        cast: &Cast,
        current: &ApprovalRecord,
        decision: Vote,
    ) -> HandOver {
        if !cast.claimed {
            return HandOver::NotOurs;
        }
        let tally = &cast.tally;
        let payload = ApprovalDecision {
            decision: match decision {
                Vote::Approve => Decision::Approve,
                Vote::Reject => Decision::Reject,
            },
            approval_voters: tally.approval_voters.clone(),
            rejection_voters: tally.rejection_voters.clone(),
        };
        let output = match serde_json::to_string(&payload) {
            Ok(output) => output,
            Err(err) => {
                // Cannot happen for this plain struct; said rather than unwrapped.
                tracing::error!(error = %err, execution = %id, "encoding the decision failed");
                return HandOver::Refused("the decision could not be encoded");
            }
        };
        let token = match self.task_token(current).await {
            Ok(token) => token,
            Err(problem) => {
                // The claim stays: nothing was sent, and a repaired row is
                // retried after the lease by the next vote.
                tracing::error!(execution = %id, problem = %problem, "task token refused");
                return HandOver::Refused("the stored approval request could not be verified");
            }
        };
        let delivery = match self.ports.tokens().send_success(&token, &output).await {
            Ok(delivery) => delivery,
            Err(err) => {
                // The claim stays; after the lease the next vote retries.
                tracing::error!(error = %err, execution = %id, "SendTaskSuccess failed");
                return HandOver::Unreachable;
            }
        };
        if let Err(err) = self
            .ports
            .db()
            .record_decision_delivery(id, &delivery)
            .await
        {
            tracing::error!(error = %err, execution = %id, "recording the delivery failed");
        }
        HandOver::Sent(delivery)
    }

    /// The plain task token of `approval`: decrypted for its own execution
    /// and matching the hash its links carry. The reason for a refusal never
    /// holds the token.
    async fn task_token(&self, approval: &ApprovalRecord) -> Result<String, TokenProblem> {
        let ciphertext = approval
            .task_token_ciphertext
            .as_deref()
            .ok_or(TokenProblem::NoCiphertext)?;
        let token = self
            .ports
            .cipher()
            .decrypt(ciphertext, &approval.execution_id)
            .await
            .port("token cipher")?;
        if task_token_hash_hex(&token) != approval.task_token_hash {
            return Err(TokenProblem::HashMismatch(approval.task_token_hash.clone()));
        }
        Ok(token)
    }

    fn decided_page(
        &self,
        ctx: &Context,
        tally: &Tally,
        decision: Vote,
        status: u16,
    ) -> PageResponse {
        let next = match decision {
            Vote::Approve => "The deployment goes on to Apply.",
            Vote::Reject => "The deployment is rejected and will not be applied.",
        };
        let (class, notice, status) = match &ctx.approval.delivery {
            Some(TokenDelivery::Delivered) => (
                "good",
                format!("The votes decided: {}. {next}", decision.as_str()),
                status,
            ),
            Some(TokenDelivery::Gone { reason }) => (
                "warn",
                format!(
                    "The votes decided: {}, but Step Functions no longer waits for this approval \
                     (the approval timed out or the execution ended), so it changes nothing. \
                     Step Functions said: {}",
                    decision.as_str(),
                    reason
                ),
                410,
            ),
            None => (
                "notice",
                format!(
                    "The votes decided: {}. The decision is being sent to Step Functions.",
                    decision.as_str()
                ),
                status,
            ),
        };
        respond(
            status,
            page::decided(
                &ctx.execution,
                &ctx.approval,
                tally,
                &ctx.link.voter,
                decision,
                class,
                &notice,
            ),
        )
    }
}
