//! The function-invoker port (Lambda in AWS): `create-deploy-stack` hands a
//! new run to `trigger_sf` with `{"run_id": N}`, and the receiver hands a vote
//! comment to `approval_response` with `{"github_vote": …}`.

use std::future::Future;

use crate::deploy::RunId;

/// Invokes a named function asynchronously with a JSON payload.
pub trait FunctionInvoker: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// Queues one invocation of `function` with `payload_json` (fire and forget:
    /// the function's own retries and the scheduled sweep cover failures).
    fn invoke(
        &self,
        function: &str,
        payload_json: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// The payload that asks `trigger_sf` to start what is ready in a run.
pub fn run_payload(run_id: RunId) -> String {
    format!("{{\"run_id\":{run_id}}}")
}

/// The payload that asks `approval_response` to count the vote comment
/// `comment_id` on pull request `pull_request` of `repository`: where the
/// comment is, never who wrote it or what it says (read again from GitHub).
pub fn github_vote_payload(repository: &str, pull_request: u64, comment_id: u64) -> String {
    serde_json::json!({"github_vote": {
        "repository": repository,
        "pull_request": pull_request,
        "comment_id": comment_id,
    }})
    .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_run_payload_is_what_trigger_sf_decodes() {
        let v: serde_json::Value = serde_json::from_str(&super::run_payload(42)).unwrap();
        assert_eq!(v, serde_json::json!({"run_id": 42}));
    }
}
