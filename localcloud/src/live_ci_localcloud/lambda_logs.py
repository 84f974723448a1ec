"""Lambda's log delivery as AWS does it: into the function's log group (its
`LoggingConfig.LogGroup`, else `/aws/lambda/<name>`), existing, with only
`logs:CreateLogStream` and `logs:PutLogEvents`.

LocalStack always writes to `/aws/lambda/<name>`, ignoring `LoggingConfig.LogGroup`
(the module sets one per function, and its roles may write only there).

LocalStack's `LogHandler.run_log_loop` (as the function's role) answers a missing
stream by calling `CreateLogGroup` first, which a role scoped to its own pre-created
group (the module's `OwnLogs`) may not do: under IAM enforcement every invocation's
logs were lost. AWS creates the group only when it is missing, so this loop creates
the stream, and the group only if the stream's creation says the group is missing.
"""

from __future__ import annotations

import logging
import time
from typing import Any

LOG = logging.getLogger(__name__)
_patched = False


def deliver(logs_client: Any, group: str, stream: str, events: list[dict[str, Any]]) -> None:
    """PutLogEvents; on a missing stream create it (and the group only if missing), retry."""
    try:
        logs_client.put_log_events(logGroupName=group, logStreamName=stream, logEvents=events)
        return
    except logs_client.exceptions.ResourceNotFoundException:
        pass
    try:
        logs_client.create_log_stream(logGroupName=group, logStreamName=stream)
    except logs_client.exceptions.ResourceAlreadyExistsException:
        pass
    except logs_client.exceptions.ResourceNotFoundException:
        try:
            logs_client.create_log_group(logGroupName=group)
        except logs_client.exceptions.ResourceAlreadyExistsException:
            pass
        logs_client.create_log_stream(logGroupName=group, logStreamName=stream)
    logs_client.put_log_events(logGroupName=group, logStreamName=stream, logEvents=events)


def patch() -> None:
    """Replaces LocalStack's Lambda log loop with one using `deliver`. Idempotent."""
    global _patched
    if _patched:
        return
    from localstack.aws.connect import connect_to
    from localstack.services.lambda_.invocation import logs
    from localstack.services.lambda_.invocation.execution_environment import ExecutionEnvironment
    from localstack.utils.aws.client_types import ServicePrincipal

    def get_log_group_name(self: Any) -> str:
        configured = (self.function_version.config.logging_config or {}).get("LogGroup")
        return configured or f"/aws/lambda/{self.function_version.id.function_name}"

    def run_log_loop(self: Any, *args: Any, **kwargs: Any) -> None:
        logs_client = connect_to.with_assumed_role(
            region_name=self.region, role_arn=self.role_arn, service_principal=ServicePrincipal.lambda_
        ).logs
        while not self._shutdown_event.is_set():
            item = self.log_queue.get()
            if item is logs.QUEUE_SHUTDOWN:
                return
            # One event per line, newlines kept, empty lines dropped (CloudWatch refuses them).
            now = int(time.time() * 1000)
            events = [{"timestamp": now, "message": line + "\n"} for line in item.logs.split("\n") if line]
            try:
                deliver(logs_client, item.log_group, item.log_stream, events)
            except Exception as e:  # noqa: BLE001 - as LocalStack's loop: log and go on
                LOG.warning("Error saving logs to group %s in region %s: %s", item.log_group, self.region, e)

    logs.LogHandler.run_log_loop = run_log_loop
    ExecutionEnvironment.get_log_group_name = get_log_group_name
    _patched = True
