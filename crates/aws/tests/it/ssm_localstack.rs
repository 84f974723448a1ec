//! The SSM parameter store adapter against LocalStack's SSM (SecureString too),
//! as the receiver uses it: secrets read decrypted, the merge lock overwritten.
#![allow(clippy::unwrap_used)] // test set-up panics by design

use aws_sdk_ssm::types::ParameterType;
use live_ci_aws::SsmParamStore;
use live_ci_core::merge_lock::MergeLock;
use live_ci_core::port::ParamStore;
use live_ci_testkit::aws::sdk_config_for;

fn client(endpoint: &str) -> aws_sdk_ssm::Client {
    aws_sdk_ssm::Client::new(&sdk_config_for(endpoint))
}

#[tokio::test]
async fn secure_strings_decrypt_and_the_lock_round_trips() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    let ssm = client(&endpoint);
    let prefix = format!("/{}", live_ci_testkit::unique("live-ci"));
    let secret = format!("{prefix}/webhook-secret");
    let lock = format!("{prefix}/merge-lock");
    ssm.put_parameter()
        .name(&secret)
        .value("s3cret-value")
        .r#type(ParameterType::SecureString)
        .send()
        .await
        .unwrap();
    ssm.put_parameter()
        .name(&lock)
        .value("none")
        .r#type(ParameterType::String)
        .send()
        .await
        .unwrap();
    let store = SsmParamStore::new(ssm.clone());
    assert_eq!(store.get(&secret).await.unwrap(), "s3cret-value");
    assert_eq!(
        MergeLock::parse(&store.get(&lock).await.unwrap()),
        Ok(MergeLock::Free)
    );
    store
        .put(&lock, &MergeLock::Held { pr: 42 }.to_string())
        .await
        .unwrap();
    assert_eq!(
        MergeLock::parse(&store.get(&lock).await.unwrap()),
        Ok(MergeLock::Held { pr: 42 })
    );
    // the value really is in SSM, not cached by the adapter
    let raw = ssm.get_parameter().name(&lock).send().await.unwrap();
    assert_eq!(raw.parameter.unwrap().value.unwrap(), "42");
}

#[tokio::test]
async fn a_missing_parameter_is_named() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    let store = SsmParamStore::new(client(&endpoint));
    let name = format!("/{}/absent", live_ci_testkit::unique("live-ci"));
    let err = store.get(&name).await.unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("ssm get-parameter {name:?}: ")),
        "{err}"
    );
    assert!(err.contains("ParameterNotFound"), "{err}");
}
