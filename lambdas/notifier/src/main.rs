//! The notifier Lambda's entry point: reads its configuration and the
//! endpoint URL (a SecureString) once per cold start and posts each SNS
//! record with [`Notifier`].

use anyhow::Context;
use live_ci_boot::{Boot, serve};
use live_ci_notifier::{Config, Notifier, SnsEvent};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let boot = Boot::start().await;
    let config = Config::from_env().context("notifier configuration")?;
    let url = boot.param(&config.url_param).await?;
    let notifier = &Notifier::new(config.format, &url)?;
    Ok(serve(|event: SnsEvent| async move { notifier.handle(&event).await }).await?)
}
