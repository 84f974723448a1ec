//! The task-token cipher against LocalStack's KMS: a round trip, and the two
//! refusals the metadb's readers must meet — a ciphertext moved to another
//! execution (the encryption context) and an altered ciphertext.
#![allow(clippy::unwrap_used)] // test set-up panics by design

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use live_ci_aws::KmsTokenCipher;
use live_ci_core::port::TokenCipher;
use live_ci_testkit::aws::sdk_config_for;

fn client(endpoint: &str) -> aws_sdk_kms::Client {
    aws_sdk_kms::Client::new(&sdk_config_for(endpoint))
}

async fn new_key(kms: &aws_sdk_kms::Client) -> String {
    kms.create_key()
        .description(live_ci_testkit::unique("live-ci-task-tokens"))
        .send()
        .await
        .unwrap()
        .key_metadata
        .unwrap()
        .key_id
}

const TOKEN: &str = "AQCEAAAAKgAAAAMAAAAAAAAAAb3d7Q-task-token";

#[tokio::test]
async fn tokens_round_trip_bound_to_their_execution_and_key() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    let kms = client(&endpoint);
    let key = new_key(&kms).await;
    let cipher = KmsTokenCipher::new(kms.clone(), &key);

    let ciphertext = cipher.encrypt(TOKEN, "run-1-a-dev-vpc-1").await.unwrap();
    assert!(!ciphertext.contains(TOKEN), "{ciphertext}");
    assert!(STANDARD.decode(&ciphertext).is_ok(), "{ciphertext}");
    assert_eq!(
        cipher
            .decrypt(&ciphertext, "run-1-a-dev-vpc-1")
            .await
            .unwrap(),
        TOKEN
    );

    // Moved onto another execution's row: refused, and the error names the
    // execution and the key but never carries the token.
    let err = cipher
        .decrypt(&ciphertext, "run-1-a-dev-app-2")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"run-1-a-dev-app-2\"") && err.contains(&key) && !err.contains(TOKEN),
        "{err}"
    );

    // Altered: every byte after the key id, flipped in turn, is refused.
    let bytes = STANDARD.decode(&ciphertext).unwrap();
    for i in [bytes.len() / 2, bytes.len() - 1] {
        let mut tampered = bytes.clone();
        tampered[i] ^= 0x01;
        let err = cipher
            .decrypt(&STANDARD.encode(&tampered), "run-1-a-dev-vpc-1")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("kms decrypt"), "{err}");
    }
    let err = cipher
        .decrypt("not base64!", "run-1-a-dev-vpc-1")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not base64"), "{err}");

    // A ciphertext made under another key (one a metadb writer with its own
    // key could produce) is refused: decrypt names the task-token key.
    let other = KmsTokenCipher::new(kms.clone(), new_key(&kms).await);
    let foreign = other.encrypt(TOKEN, "run-1-a-dev-vpc-1").await.unwrap();
    assert!(
        cipher.decrypt(&foreign, "run-1-a-dev-vpc-1").await.is_err(),
        "a ciphertext of another key decrypted"
    );
}
