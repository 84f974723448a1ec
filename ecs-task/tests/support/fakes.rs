//! Recording fakes of the ports the task talks to besides the metadb and S3:
//! task tokens, the git host, the parameter store and the function invoker.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Mutex;

use live_ci_core::params::ParamStore;
use live_ci_core::port::{
    ArtifactStore, FunctionInvoker, RoleAssumer, TaskTokens, TemporaryCredentials, TokenDelivery,
};
use live_ci_core::status::{CommitStatus, GitHost, PullRequest};

#[derive(Debug, thiserror::Error)]
#[error("fake: {0}")]
pub struct FakeError(pub String);

/// What a task token received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Success {
        token: String,
        output: String,
    },
    Failure {
        token: String,
        error: String,
        cause: String,
    },
}

#[derive(Debug, Default)]
pub struct RecordingTokens {
    pub sent: Mutex<Vec<Sent>>,
    pub heartbeats: Mutex<Vec<String>>,
}

impl RecordingTokens {
    pub fn take(&self) -> Vec<Sent> {
        std::mem::take(&mut *self.sent.lock().unwrap())
    }
}

impl TaskTokens for RecordingTokens {
    type Error = FakeError;

    async fn send_success(
        &self,
        token: &str,
        output_json: &str,
    ) -> Result<TokenDelivery, FakeError> {
        self.sent.lock().unwrap().push(Sent::Success {
            token: token.into(),
            output: output_json.into(),
        });
        Ok(TokenDelivery::Delivered)
    }

    async fn send_failure(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> Result<TokenDelivery, FakeError> {
        self.sent.lock().unwrap().push(Sent::Failure {
            token: token.into(),
            error: error.into(),
            cause: cause.into(),
        });
        Ok(TokenDelivery::Delivered)
    }

    async fn heartbeat(&self, token: &str) -> Result<TokenDelivery, FakeError> {
        self.heartbeats.lock().unwrap().push(token.into());
        Ok(TokenDelivery::Delivered)
    }
}

/// A git host that records statuses and keeps comments by marker, as GitHub's
/// adapter does (one comment per marker, updated in place).
#[derive(Debug, Default)]
pub struct RecordingGitHost {
    pub statuses: Mutex<Vec<CommitStatus>>,
    pub comments: Mutex<BTreeMap<(u64, String), String>>,
    pub comment_writes: Mutex<u32>,
    pub open: Vec<PullRequest>,
}

impl RecordingGitHost {
    pub fn statuses(&self) -> Vec<CommitStatus> {
        self.statuses.lock().unwrap().clone()
    }
}

impl GitHost for RecordingGitHost {
    type Error = FakeError;

    async fn set_status(&self, status: &CommitStatus) -> Result<(), FakeError> {
        self.statuses.lock().unwrap().push(status.clone());
        Ok(())
    }

    async fn pull_request_files(&self, _number: u64) -> Result<Vec<String>, FakeError> {
        Ok(vec!["dev/app/main.tf".into()])
    }

    async fn open_pull_requests(&self, _base: &str) -> Result<Vec<PullRequest>, FakeError> {
        Ok(self.open.clone())
    }

    async fn upsert_comment(&self, number: u64, marker: &str, body: &str) -> Result<(), FakeError> {
        assert!(body.contains(marker), "the comment must carry its marker");
        self.comments
            .lock()
            .unwrap()
            .insert((number, marker.to_string()), body.to_string());
        *self.comment_writes.lock().unwrap() += 1;
        Ok(())
    }
}

#[derive(Debug, Default)]
pub struct MemParams {
    pub values: Mutex<BTreeMap<String, String>>,
    pub puts: Mutex<Vec<(String, String)>>,
}

impl ParamStore for MemParams {
    type Error = FakeError;

    async fn get(&self, name: &str) -> Result<String, FakeError> {
        self.values
            .lock()
            .unwrap()
            .get(name)
            .cloned()
            .ok_or_else(|| FakeError(format!("no parameter {name:?}")))
    }

    async fn put(&self, name: &str, value: &str) -> Result<(), FakeError> {
        self.puts.lock().unwrap().push((name.into(), value.into()));
        self.values
            .lock()
            .unwrap()
            .insert(name.into(), value.into());
        Ok(())
    }
}

/// Records every invoke (function, exact payload).
#[derive(Debug, Default)]
pub struct RecordingInvoker {
    pub calls: Mutex<Vec<(String, String)>>,
}

impl FunctionInvoker for RecordingInvoker {
    type Error = FakeError;

    async fn invoke(&self, function: &str, payload_json: &str) -> Result<(), FakeError> {
        self.calls
            .lock()
            .unwrap()
            .push((function.into(), payload_json.into()));
        Ok(())
    }
}

/// An in-memory, unversioned plan store named like S3.
#[derive(Debug, Default)]
pub struct MemArtifacts {
    pub objects: Mutex<BTreeMap<String, Vec<u8>>>,
}

impl ArtifactStore for MemArtifacts {
    type Error = FakeError;

    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<Option<String>, FakeError> {
        self.objects.lock().unwrap().insert(key.into(), bytes);
        Ok(None)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, FakeError> {
        Ok(self.objects.lock().unwrap().get(key).cloned())
    }

    async fn get_version(
        &self,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<Option<Vec<u8>>, FakeError> {
        assert_eq!(version_id, None, "an unversioned store gave no version");
        self.get(key).await
    }

    fn uri(&self, key: &str) -> String {
        format!("mem://plans/{key}")
    }

    fn key_of(&self, uri: &str) -> Option<String> {
        uri.strip_prefix("mem://plans/").map(str::to_string)
    }
}

/// Records every role assumption made through a real adapter (LocalStack's
/// STS): which role, which session, and the access key it issued.
#[derive(Debug)]
pub struct RecordingRoles<R> {
    pub inner: R,
    pub calls: Mutex<Vec<(String, String, String)>>,
}

impl<R> RecordingRoles<R> {
    pub fn new(inner: R) -> Self {
        RecordingRoles {
            inner,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// (role, session name, issued access key id) per call.
    pub fn calls(&self) -> Vec<(String, String, String)> {
        self.calls.lock().unwrap().clone()
    }
}

impl<R: RoleAssumer> RoleAssumer for RecordingRoles<R> {
    type Error = R::Error;

    async fn assume_role(
        &self,
        role_arn: &str,
        session_name: &str,
    ) -> Result<TemporaryCredentials, R::Error> {
        let c = self.inner.assume_role(role_arn, session_name).await?;
        self.calls.lock().unwrap().push((
            role_arn.into(),
            session_name.into(),
            c.access_key_id.clone(),
        ));
        Ok(c)
    }
}

/// A fake's failure is deliberate and repeats: permanent.
impl live_ci_core::port::Classify for FakeError {
    fn kind(&self) -> live_ci_core::port::ErrorKind {
        live_ci_core::port::ErrorKind::Permanent
    }
}
