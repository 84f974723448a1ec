//! SQS as the core's [`ApplyQueue`]: a plan task that waits for its unit's
//! approved apply creates one queue, the state machine's `sqs:sendMessage
//! .waitForTaskToken` state sends the apply to it, and the task deletes it
//! when it is done waiting.

use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::QueueAttributeName;
use live_ci_core::port::ApplyQueue;

use crate::error::{AwsError, Failure};

/// How long a taken message stays hidden: longer than any apply, so SQS never
/// hands the same job out again while the task that took it works on it (it
/// is deleted at once anyway).
const VISIBILITY_TIMEOUT_SECONDS: u32 = 43_200;

#[derive(Debug, Clone)]
pub struct SqsApplyQueue {
    client: Client,
}

impl SqsApplyQueue {
    pub fn new(client: Client) -> Self {
        SqsApplyQueue { client }
    }
}

fn err(operation: &'static str, queue: &str, message: Failure) -> AwsError {
    AwsError::Sqs {
        operation,
        queue: queue.to_string(),
        message,
    }
}

impl ApplyQueue for SqsApplyQueue {
    type Error = AwsError;

    async fn create(&self, name: &str, retention_seconds: u64) -> Result<String, AwsError> {
        // SQS keeps messages between 60 s and 14 days.
        let retention = retention_seconds.clamp(60, 1_209_600);
        let out = self
            .client
            .create_queue()
            .queue_name(name)
            .attributes(
                QueueAttributeName::MessageRetentionPeriod,
                retention.to_string(),
            )
            .attributes(
                QueueAttributeName::VisibilityTimeout,
                VISIBILITY_TIMEOUT_SECONDS.to_string(),
            )
            // The message carries a task token: encrypted at rest.
            .attributes(QueueAttributeName::SqsManagedSseEnabled, "true")
            .send()
            .await
            .map_err(|e| err("create-queue", name, Failure::sdk(e)))?;
        out.queue_url.ok_or_else(|| {
            err(
                "create-queue",
                name,
                Failure::permanent("no queue url in the answer"),
            )
        })
    }

    async fn take(&self, url: &str, wait_seconds: u32) -> Result<Option<String>, AwsError> {
        let out = self
            .client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(1)
            .wait_time_seconds(i32::try_from(wait_seconds.min(20)).unwrap_or(20))
            .send()
            .await
            .map_err(|e| err("receive-message", url, Failure::sdk(e)))?;
        let Some(message) = out.messages.unwrap_or_default().into_iter().next() else {
            return Ok(None);
        };
        if let Some(receipt) = &message.receipt_handle {
            self.client
                .delete_message()
                .queue_url(url)
                .receipt_handle(receipt)
                .send()
                .await
                .map_err(|e| err("delete-message", url, Failure::sdk(e)))?;
        }
        Ok(message.body)
    }

    async fn delete(&self, url: &str) -> Result<(), AwsError> {
        match self.client.delete_queue().queue_url(url).send().await {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.code(),
                    Some("AWS.SimpleQueueService.NonExistentQueue" | "QueueDoesNotExist")
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(err("delete-queue", url, Failure::sdk(e))),
        }
    }
}
