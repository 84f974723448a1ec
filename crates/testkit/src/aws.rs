//! AWS SDK clients of the project's LocalStack (fake keys, its region) and the
//! throwaway Step Functions state machines the tests run there.

use aws_config::SdkConfig;
use aws_sdk_sfn::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};

use crate::{localstack_endpoint, unique};

/// The region every test client and resource uses.
pub const REGION: &str = "us-east-1";

/// The execution role of test state machines ([`state_machine`] creates it).
pub const SFN_ROLE: &str = "arn:aws:iam::000000000000:role/live-ci-sfn";

/// The SDK configuration of the project's LocalStack, for any service's
/// `Client::new`: STS there assumes any role, as a target account's trust
/// policy would let the task role do. Panics naming the reason when LocalStack
/// cannot be started.
pub fn sdk_config() -> SdkConfig {
    let endpoint =
        localstack_endpoint().unwrap_or_else(|e| panic!("localstack is needed here: {e}"));
    sdk_config_for(&endpoint)
}

/// [`sdk_config`] for a LocalStack at `endpoint`.
pub fn sdk_config_for(endpoint: &str) -> SdkConfig {
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "test", "test", None, None, "static",
        )))
        .endpoint_url(endpoint)
        .build()
}

/// A Step Functions client of LocalStack.
pub fn sfn_client() -> aws_sdk_sfn::Client {
    aws_sdk_sfn::Client::new(&sdk_config())
}

/// The test state machines' execution role, created once per LocalStack: the
/// local cloud evaluates IAM as AWS does, so the service integrations the
/// tests' definitions call (SQS, SNS, ECS, Lambda) are allowed to it, and it
/// trusts Step Functions. An existing role is kept.
pub async fn ensure_sfn_role() {
    let iam = aws_sdk_iam::Client::new(&sdk_config());
    let name = SFN_ROLE.rsplit('/').next().unwrap_or("live-ci-sfn");
    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"states.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
    if let Err(e) = iam
        .create_role()
        .role_name(name)
        .assume_role_policy_document(trust)
        .send()
        .await
    {
        let exists = e
            .as_service_error()
            .is_some_and(|s| s.is_entity_already_exists_exception());
        assert!(exists, "create role {name}: {e:?}");
    }
    // Test resources have unique names: the integrations are allowed on any.
    let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["sqs:SendMessage","sns:Publish","ecs:RunTask","ecs:StopTask","ecs:DescribeTasks","iam:PassRole","lambda:InvokeFunction","kms:GenerateDataKey","kms:Decrypt","events:PutTargets","events:PutRule","events:DescribeRule"],"Resource":"*"}]}"#;
    iam.put_role_policy()
        .role_name(name)
        .policy_name("test-integrations")
        .policy_document(policy)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put role policy {name}: {e:?}"));
}

/// Creates a state machine named `prefix`-unique with `definition` (ASL JSON)
/// and returns its ARN.
pub async fn state_machine(sfn: &aws_sdk_sfn::Client, prefix: &str, definition: &str) -> String {
    ensure_sfn_role().await;
    sfn.create_state_machine()
        .name(unique(prefix))
        .definition(definition)
        .role_arn(SFN_ROLE)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create state machine {prefix}: {e:?}"))
        .state_machine_arn
}

/// A role made for one test, with `policy` (an identity policy, JSON) inline and
/// trusting the account, and the SDK configuration of a session assumed from it:
/// clients built on it are authorised by the local cloud's IAM enforcement as
/// that role (localcloud/README.md "IAM") at `endpoint`. Returns (the role ARN,
/// the config).
pub async fn role_session(endpoint: &str, name: &str, policy: &str) -> (String, SdkConfig) {
    let iam = aws_sdk_iam::Client::new(&sdk_config_for(endpoint));
    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:root"},"Action":"sts:AssumeRole"}]}"#;
    let role = iam
        .create_role()
        .role_name(name)
        .assume_role_policy_document(trust)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create role {name}: {e:?}"));
    let arn = role.role().map(|r| r.arn().to_string()).unwrap_or_default();
    iam.put_role_policy()
        .role_name(name)
        .policy_name("test")
        .policy_document(policy)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put role policy {name}: {e:?}"));
    // AssumeRole as the driver (the account's administrator): LocalStack routes
    // by the credential scope and does not check the signature.
    let answer = reqwest::Client::new()
        .post(format!("{}/", endpoint.trim_end_matches('/')))
        .header(
            "Authorization",
            "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/sts/aws4_request, SignedHeaders=host, Signature=0",
        )
        .form(&[
            ("Action", "AssumeRole"),
            ("Version", "2011-06-15"),
            ("RoleArn", arn.as_str()),
            ("RoleSessionName", "test"),
        ])
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .unwrap_or_else(|e| panic!("assume role {arn}: {e}"))
        .text()
        .await
        .unwrap_or_else(|e| panic!("assume role {arn}: {e}"));
    let field = |tag: &str| {
        let open = format!("<{tag}>");
        let from = answer
            .find(&open)
            .unwrap_or_else(|| panic!("no {tag} in {answer}"))
            + open.len();
        let to = answer[from..]
            .find(&format!("</{tag}>"))
            .unwrap_or_else(|| panic!("no {tag} in {answer}"))
            + from;
        answer[from..to].to_string()
    };
    let credentials = Credentials::new(
        field("AccessKeyId"),
        field("SecretAccessKey"),
        Some(field("SessionToken")),
        None,
        "assumed-role",
    );
    let config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .endpoint_url(endpoint)
        .build();
    (arn, config)
}

/// Whether the local cloud at `endpoint` enforces IAM (`GET /_live_ci/iam/stats`).
pub async fn iam_enforced(endpoint: &str) -> bool {
    let stats: Option<serde_json::Value> = match reqwest::get(format!(
        "{}/_live_ci/iam/stats",
        endpoint.trim_end_matches('/')
    ))
    .await
    {
        Ok(r) => r.json().await.ok(),
        Err(_) => None,
    };
    stats.is_some_and(|s| s["enforced"] == true)
}

/// A role `service` (e.g. `states.amazonaws.com`) may assume, with `policy`
/// inline (JSON); its ARN. For a test state machine whose role lacks one grant.
pub async fn service_role(name: &str, service: &str, policy: &str) -> String {
    let iam = aws_sdk_iam::Client::new(&sdk_config());
    let trust = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"Service":"{service}"}},"Action":"sts:AssumeRole"}}]}}"#
    );
    let role = iam
        .create_role()
        .role_name(name)
        .assume_role_policy_document(trust)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create role {name}: {e:?}"));
    iam.put_role_policy()
        .role_name(name)
        .policy_name("test")
        .policy_document(policy)
        .send()
        .await
        .unwrap_or_else(|e| panic!("put role policy {name}: {e:?}"));
    role.role().map(|r| r.arn().to_string()).unwrap_or_default()
}
