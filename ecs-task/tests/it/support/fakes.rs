//! Recording fakes of the ports the task talks to besides the metadb and S3:
//! task tokens, the function invoker, an in-memory plan store and role
//! assumption; the git host and parameter store fakes are live-ci-testkit's.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Mutex;

use live_ci_core::port::{
    ArtifactStore, FunctionInvoker, RoleAssumer, TaskTokens, TemporaryCredentials, TokenDelivery,
};

pub(crate) use live_ci_testkit::git_host::RecordingGitHost;
pub(crate) use live_ci_testkit::params::{FakeError, MemoryParams};

/// What a task token received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sent {
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
pub(crate) struct RecordingTokens {
    pub sent: Mutex<Vec<Sent>>,
    pub heartbeats: Mutex<Vec<String>>,
}

impl RecordingTokens {
    pub(crate) fn take(&self) -> Vec<Sent> {
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

/// Records every invoke (function, exact payload).
#[derive(Debug, Default)]
pub(crate) struct RecordingInvoker {
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
pub(crate) struct MemArtifacts {
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
pub(crate) struct RecordingRoles<R> {
    pub inner: R,
    pub calls: Mutex<Vec<(String, String, String)>>,
}

impl<R> RecordingRoles<R> {
    pub(crate) fn new(inner: R) -> Self {
        RecordingRoles {
            inner,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// (role, session name, issued access key id) per call.
    pub(crate) fn calls(&self) -> Vec<(String, String, String)> {
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
