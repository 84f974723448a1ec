//! Where this task's output can be read: the CloudWatch console URL of its log
//! stream, from the ECS task metadata endpoint (v4) in AWS. Locally there is
//! none and statuses carry no link.

use live_ci_core::task::cloudwatch_logs_url;
use serde_json::Value;

use crate::config::Common;

/// The console URL of this task's log stream, when it can be known.
pub async fn logs_url(config: &Common) -> Option<String> {
    let uri = config.ecs_metadata_uri.as_deref()?;
    let metadata: Value = match reqwest::get(uri).await {
        Ok(r) => r.json().await.ok()?,
        Err(e) => {
            tracing::warn!(error = %e, "reading the ecs task metadata");
            return None;
        }
    };
    stream_from_metadata(config, &metadata)
}

/// The stream from the container metadata: its awslogs options when present,
/// otherwise `LOG_GROUP` and `<LOG_STREAM_PREFIX>/<container>/<task id>`
/// (the awslogs driver's naming).
pub(crate) fn stream_from_metadata(config: &Common, metadata: &Value) -> Option<String> {
    let options = metadata.get("LogOptions");
    let opt = |k: &str| options.and_then(|o| o.get(k)).and_then(Value::as_str);
    let region = opt("awslogs-region")
        .map(str::to_string)
        .or_else(|| config.region.clone())?;
    if let (Some(group), Some(stream)) = (opt("awslogs-group"), opt("awslogs-stream")) {
        return Some(cloudwatch_logs_url(&region, group, stream));
    }
    let container = metadata.get("Name")?.as_str()?;
    let task_arn = metadata
        .pointer("/Labels/com.amazonaws.ecs.task-arn")?
        .as_str()?;
    let task_id = task_arn.rsplit('/').next()?;
    let group = config.log_group.as_deref()?;
    let prefix = config.log_stream_prefix.as_deref()?;
    Some(cloudwatch_logs_url(
        &region,
        group,
        &format!("{prefix}/{container}/{task_id}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_follows_the_awslogs_naming() {
        use crate::config::FromLookup;
        let mut config = Common::from_lookup(|k| match k {
            "REPO_CLONE_URL" => Some("/repo".into()),
            "LOG_GROUP" => Some("/live-ci/tasks".into()),
            "LOG_STREAM_PREFIX" => Some("terra-run".into()),
            "AWS_REGION" => Some("eu-west-1".into()),
            _ => None,
        })
        .unwrap();
        let metadata = serde_json::json!({
            "Name": "terra-run",
            "Labels": {"com.amazonaws.ecs.task-arn": "arn:aws:ecs:eu-west-1:1:task/c/abc123"}
        });
        assert_eq!(
            stream_from_metadata(&config, &metadata).unwrap(),
            cloudwatch_logs_url("eu-west-1", "/live-ci/tasks", "terra-run/terra-run/abc123")
        );
        let with_options = serde_json::json!({"LogOptions": {
            "awslogs-group": "g", "awslogs-region": "us-east-2", "awslogs-stream": "s/t"}});
        assert_eq!(
            stream_from_metadata(&config, &with_options).unwrap(),
            cloudwatch_logs_url("us-east-2", "g", "s/t")
        );
        config.log_group = None;
        assert_eq!(stream_from_metadata(&config, &metadata), None);
    }
}
