//! The whole approval by a person, in a real browser: a real Step Functions
//! execution (LocalStack) waits in an `sns:publish.waitForTaskToken` state
//! shaped like Request Approval; its SNS message reaches approval_request's
//! handler, whose e-mail (HTML) is opened in headless Chromium; the Approve
//! link opens the confirmation page served by approval_response's handler on
//! a local port; pressing Approve records the vote in PostgreSQL and sends
//! the decision to Step Functions, and the execution succeeds with it.
//! Screenshots: `target/test-artifacts/approval-response/`. Moved here from
//! approval-response's tests (it needs both Lambdas); the run page's browser
//! test stays there.
#![allow(clippy::unwrap_used)]

use crate::requester_fakes::Fakes as RequesterFakes;
use live_ci_testkit::approval as support;

use std::time::{Duration, Instant};

use aws_sdk_sfn::types::ExecutionStatus;
use aws_sdk_sqs::types::QueueAttributeName;
use live_ci_approval_request::{ApprovalRequester, RequestSettings};
use live_ci_core::port::{ApprovalStore, TokenDelivery};
use live_ci_stepfunctions::{ApprovalRequest, SfnTaskTokens};
use live_ci_testkit::aws::{sdk_config, state_machine};
use live_ci_testkit::screens::{artifacts, node_path};
use live_ci_testkit::{repo_root, unique};
use serde_json::{Value, json};
use support::*;

use crate::server;

/// A state machine whose one state is Request Approval's SNS publish, with
/// the same message shape, and the queue its topic delivers to.
async fn waiting_execution(
    sfn: &aws_sdk_sfn::Client,
    sns: &aws_sdk_sns::Client,
    sqs: &aws_sdk_sqs::Client,
    input: &Value,
) -> (String, ApprovalRequest) {
    let topic = sns
        .create_topic()
        .name(unique("approval"))
        .send()
        .await
        .unwrap()
        .topic_arn
        .unwrap();
    let queue = sqs
        .create_queue()
        .queue_name(unique("approval"))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let queue_arn = sqs
        .get_queue_attributes()
        .queue_url(&queue)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()
        .remove(&QueueAttributeName::QueueArn)
        .unwrap();
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint(queue_arn)
        .attributes("RawMessageDelivery", "true")
        .send()
        .await
        .unwrap();
    let definition = json!({
        "StartAt": "Request Approval",
        "States": {
            "Request Approval": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sns:publish.waitForTaskToken",
                "Parameters": {
                    "TopicArn": topic,
                    "Message": {
                        "task_token.$": "$$.Task.Token",
                        "sfn_execution_arn.$": "$$.Execution.Id",
                        "execution.$": "$$.Execution.Input",
                        "plan": {
                            "execution_id.$": "$.execution_id",
                            "to_add": 3, "to_change": 1, "to_destroy": 0,
                            "plan_artifact": "s3://artifacts/plan.tfplan",
                            "first_changes": ["update aws_db_instance.main", "create aws_s3_bucket.logs"],
                            "logs_url": "https://console.aws.amazon.com/cloudwatch/home#logsV2:log-groups/log-group/terra-run"
                        }
                    }
                },
                "TimeoutSeconds": 300,
                "ResultPath": "$.approval",
                "End": true
            }
        }
    });
    let machine = state_machine(sfn, "approval-browser", &definition.to_string()).await;
    let execution_arn = sfn
        .start_execution()
        .state_machine_arn(&machine)
        .name(unique("exec"))
        .input(input.to_string())
        .send()
        .await
        .unwrap()
        .execution_arn;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let out = sqs
            .receive_message()
            .queue_url(&queue)
            .wait_time_seconds(2)
            .send()
            .await
            .unwrap();
        if let Some(m) = out.messages.unwrap_or_default().into_iter().next() {
            let request =
                live_ci_stepfunctions::payload::decode("approval request", &m.body.unwrap())
                    .unwrap();
            return (execution_arn, request);
        }
    }
    panic!("no approval request published within 30 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voter_approves_in_a_browser_and_the_execution_goes_on() {
    let node_path = node_path();
    let config = sdk_config();
    let (sfn, sns, sqs) = (
        aws_sdk_sfn::Client::new(&config),
        aws_sdk_sns::Client::new(&config),
        aws_sdk_sqs::Client::new(&config),
    );
    let id = "run-4-d00d-dev-browser-101";
    let voter = "alice@example.com";
    let (tdb, db, record) = awaiting(id, &[voter, "bob@example.com"], 1, 1).await;
    let plans = crate::plan_page::MemPlans::default();
    crate::plan_page::save_plan(&db, &plans, &record, &crate::plan_page::show_json()).await;
    let (execution_arn, request) = waiting_execution(
        &sfn,
        &sns,
        &sqs,
        &serde_json::to_value(record.sfn_input()).unwrap(),
    )
    .await;

    let (listener, addr) = server::listen().await;
    let fakes = RequesterFakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(
        RequestSettings {
            approval_url: format!("http://{addr}"),
            from_address: "live-ci@example.com".into(),
            approval_timeout_secs: 300,
            repository: "acme/live".into(),
            github_web_url: "https://github.com".into(),
        },
        key(),
        fakes.clone(),
    );
    requester.handle(&request, now()).await.unwrap();
    let mail = fakes
        .mailer
        .sent()
        .into_iter()
        .find(|m| m.to == voter)
        .unwrap();
    let dir = artifacts("approval-response");
    let email_file = dir.join("email.html");
    std::fs::write(&email_file, &mail.html).unwrap();
    std::fs::write(dir.join("email.txt"), &mail.text).unwrap();

    let responder = std::sync::Arc::new(crate::ports::responder_with_plans(
        key(),
        db.clone(),
        SfnTaskTokens::new(sfn.clone()),
        cipher().await,
        Some(plans),
    ));
    let served = std::sync::Arc::clone(&responder);
    let server = server::serve(listener, move |req| {
        let r = std::sync::Arc::clone(&served);
        async move {
            let now_ms = i64::try_from(now()).unwrap() * 1000;
            r.handle(&req, now_ms).await
        }
    });

    let script = repo_root().join("tests/e2e/tests/approval/browser/vote.js");
    let out = tokio::process::Command::new("node")
        .arg(&script)
        .arg(&email_file)
        .arg(&dir)
        .env("NODE_PATH", &node_path)
        .output()
        .await
        .unwrap();
    server.abort();
    assert!(
        out.status.success(),
        "browser: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pages: Value = serde_json::from_slice(&out.stdout).unwrap();
    std::fs::write(
        dir.join("pages.json"),
        serde_json::to_string_pretty(&pages).unwrap(),
    )
    .unwrap();

    let email = pages["email"].as_str().unwrap();
    assert!(
        email.contains("3 to add, 1 to change, 0 to destroy"),
        "{email}"
    );
    assert!(
        pages["confirmUrl"]
            .as_str()
            .unwrap()
            .starts_with(&format!("http://{addr}/?t="))
    );
    let confirm = pages["confirm"].as_str().unwrap();
    assert!(
        confirm.contains("Approve deployment of dev/run-4-d00d-dev-browser-101?"),
        "{confirm}"
    );
    assert!(confirm.contains("Approvals: 0 of 1 needed"), "{confirm}");
    // The saved plan, as the browser shows it: resource by resource, the
    // sensitive value masked, the unknown one known after apply, the hostile
    // value as inert text.
    assert!(
        confirm.contains("The plan: 2 resource changes"),
        "{confirm}"
    );
    assert!(confirm.contains("update aws_db_instance.main"), "{confirm}");
    assert!(confirm.contains("create aws_s3_bucket.logs"), "{confirm}");
    assert!(
        confirm.contains("password\t(sensitive value)\t→\t(sensitive value)"),
        "{confirm}"
    );
    assert!(
        confirm.contains("arn\t(none)\t→\t(known after apply)"),
        "{confirm}"
    );
    assert!(confirm.contains("<script>alert('x')</script>"), "{confirm}");
    assert!(!confirm.contains("hunter2"), "{confirm}");
    assert_eq!(pages["scripts"], 0, "{pages}");
    assert!(email.contains("update aws_db_instance.main"), "{email}");
    assert_eq!(pages["resultStatus"], 200);
    let result = pages["result"].as_str().unwrap();
    assert!(
        result.contains("The votes decided: approve. The deployment goes on to Apply."),
        "{result}"
    );
    assert!(
        result.contains("Your current vote (alice@example.com): approve"),
        "{result}"
    );

    // The vote is in the metadb and the decision was handed over once.
    let tally = db.tally(id).await.unwrap().unwrap();
    assert_eq!(tally.approval_voters, [voter]);
    let approval = db.approval_request(id).await.unwrap().unwrap();
    assert_eq!(approval.delivery, Some(TokenDelivery::Delivered));
    // And Step Functions went on with exactly that decision.
    let deadline = Instant::now() + Duration::from_secs(20);
    let described = loop {
        let d = sfn
            .describe_execution()
            .execution_arn(&execution_arn)
            .send()
            .await
            .unwrap();
        if d.status != ExecutionStatus::Running || Instant::now() > deadline {
            break d;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(described.status, ExecutionStatus::Succeeded);
    let output: Value = serde_json::from_str(described.output().unwrap()).unwrap();
    assert_eq!(
        output["approval"],
        json!({"decision": "approve", "approval_voters": [voter], "rejection_voters": []})
    );
    for shot in ["1-email.png", "2-confirm.png", "3-result.png"] {
        assert!(dir.join(shot).metadata().unwrap().len() > 1000, "{shot}");
    }
    tdb.drop_db().await;
}
