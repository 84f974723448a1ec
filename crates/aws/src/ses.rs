//! SES v2 as the core's [`Mailer`]: one `SendEmail` per message, a simple
//! message with a plain-text and an HTML part, both UTF-8.

use aws_sdk_sesv2::Client;
use aws_sdk_sesv2::types::{Body, Content, Destination, EmailContent, Message};
use live_ci_core::port::{Email, Mailer};

use live_ci_core::port::ErrorKind;

use crate::error::{AwsError, Failure};

/// Sends mail through SES v2.
#[derive(Debug, Clone)]
pub struct SesMailer {
    client: Client,
    /// An SES configuration set (event publishing, suppression), if any.
    configuration_set: Option<String>,
}

impl SesMailer {
    /// A mailer using `client`, with no configuration set.
    pub fn new(client: Client) -> Self {
        SesMailer {
            client,
            configuration_set: None,
        }
    }

    /// Names SES configuration set `name` on every mail (`SES_CONFIGURATION_SET`).
    pub fn with_configuration_set(mut self, name: impl Into<String>) -> Self {
        self.configuration_set = Some(name.into());
        self
    }
}

fn utf8(data: &str, to: &str) -> Result<Content, AwsError> {
    Content::builder()
        .data(data)
        .charset("UTF-8")
        .build()
        .map_err(|e| AwsError::Ses {
            to: to.to_string(),
            message: Failure::other(ErrorKind::Permanent, e),
        })
}

impl Mailer for SesMailer {
    type Error = AwsError;

    async fn send(&self, email: &Email) -> Result<String, AwsError> {
        let message = Message::builder()
            .subject(utf8(&email.subject, &email.to)?)
            .body(
                Body::builder()
                    .text(utf8(&email.text, &email.to)?)
                    .html(utf8(&email.html, &email.to)?)
                    .build(),
            )
            .build();
        let out = self
            .client
            .send_email()
            .from_email_address(&email.from)
            .destination(Destination::builder().to_addresses(&email.to).build())
            .content(EmailContent::builder().simple(message).build())
            .set_configuration_set_name(self.configuration_set.clone())
            .send()
            .await
            .map_err(|e| AwsError::Ses {
                to: email.to.clone(),
                message: Failure::sdk(e),
            })?;
        Ok(out.message_id.unwrap_or_default())
    }
}
