"""ECS tasks started through the ECS API, directly or by Step Functions, run as local
processes with the merged command and environment; their status and exit code show
in DescribeTasks and their output in CloudWatch Logs."""

from __future__ import annotations

import json
import shutil
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, wait_for

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/live-ci-smoke-task"


@pytest.fixture(scope="module")
def cluster(aws: Callable[[str], Any]) -> str:
    return aws("ecs").create_cluster(clusterName=f"smoke-{int(time.time())}")["cluster"]["clusterArn"]


@pytest.fixture(scope="module")
def task_definition(aws: Callable[[str], Any], image_map: Callable[[str, list[str]], None]) -> str:
    image_map(IMAGE, ["bash", str(FIXTURES / "ecs_task.sh")])
    # The Fargate shape Terraform writes: memory at the task level only.
    return aws("ecs").register_task_definition(
        family="smoke-terra-run",
        networkMode="awsvpc",
        requiresCompatibilities=["FARGATE"],
        cpu="256",
        memory="512",
        containerDefinitions=[
            {
                "name": "terra-run",
                "image": f"{IMAGE}:1.0",
                "essential": True,
                "command": ["from-task-definition"],
                "environment": [
                    {"name": "FROM_DEFINITION", "value": "definition"},
                    {"name": "OVERRIDDEN", "value": "definition"},
                ],
                "logConfiguration": {
                    "logDriver": "awslogs",
                    "options": {
                        "awslogs-group": "/live-ci/smoke",
                        "awslogs-region": "us-east-1",
                        "awslogs-stream-prefix": "smoke",
                        "awslogs-create-group": "true",
                    },
                },
            }
        ],
    )["taskDefinition"]["taskDefinitionArn"]


def run(aws: Callable[[str], Any], cluster: str, task_definition: str, env: dict[str, str], command: list[str]) -> str:
    response = aws("ecs").run_task(
        cluster=cluster,
        taskDefinition=task_definition,
        launchType="FARGATE",
        # Placeholder ids, as a local Terraform example has: the agent copes.
        networkConfiguration={"awsvpcConfiguration": {"subnets": ["subnet-0local"], "securityGroups": ["sg-0local"]}},
        overrides={
            "containerOverrides": [
                {
                    "name": "terra-run",
                    "command": command,
                    "environment": [{"name": k, "value": v} for k, v in env.items()],
                }
            ]
        },
    )
    assert response["failures"] == []
    return response["tasks"][0]["taskArn"]


def stopped(aws: Callable[[str], Any], cluster: str, task_arn: str, timeout: float = 15) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        task = aws("ecs").describe_tasks(cluster=cluster, tasks=[task_arn])["tasks"][0]
        return task if task["lastStatus"] == "STOPPED" else None

    return wait_for(f"task {task_arn} to stop", check, timeout=timeout)


def test_run_task_runs_the_process_with_merged_command_and_environment(
    aws: Callable[[str], Any], cluster: str, task_definition: str, tmp_path: Path, endpoint: str
) -> None:
    out = tmp_path / "task.out"
    started = time.monotonic()
    task_arn = run(
        aws,
        cluster,
        task_definition,
        {
            "OVERRIDDEN": "override",
            "OUT_FILE": str(out),
            "EXIT_CODE": "3",
            "METADATA_OUT": str(tmp_path / "metadata.json"),
            "RECORD": "FROM_DEFINITION OVERRIDDEN AWS_ENDPOINT_URL AWS_REGION AWS_ACCESS_KEY_ID UID LIVE_CI_CHILD_UID",
        },
        ["terra-run", "--unit", "dev/vpc app"],
    )
    task = stopped(aws, cluster, task_arn)
    print(f"\nECS task: RunTask to STOPPED in {time.monotonic() - started:.2f} s")
    assert task["containers"][0]["exitCode"] == 3
    assert task["stopCode"] == "EssentialContainerExited"
    assert task["stoppedReason"] == "Essential container in task exited"
    recorded = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert recorded == {
        "ARGS": "terra-run --unit dev/vpc app",
        "FROM_DEFINITION": "definition",
        "OVERRIDDEN": "override",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "000000000000",
        # As Fargate runs the image's USER: not root; and the image's child user.
        "UID": "10001",
        "LIVE_CI_CHILD_UID": "10002",
    }
    task_id = task_arn.rsplit("/", 1)[-1]
    events = aws("logs").get_log_events(logGroupName="/live-ci/smoke", logStreamName=f"smoke/terra-run/{task_id}")[
        "events"
    ]
    assert [e["message"] for e in events] == ["task argv: terra-run --unit dev/vpc app", "task done, exiting 3"]
    # The task metadata endpoint, as on Fargate: how a task finds its own log stream.
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert metadata["TaskARN"] == task_arn
    assert metadata["Cluster"] == cluster
    assert metadata["KnownStatus"] == "RUNNING"
    (container,) = metadata["Containers"]
    assert container["Name"] == "terra-run"
    assert container["LogOptions"]["awslogs-group"] == "/live-ci/smoke"
    assert container["LogOptions"]["awslogs-stream"] == f"smoke/terra-run/{task_id}"


def test_stop_task_stops_the_process(
    aws: Callable[[str], Any], cluster: str, task_definition: str, tmp_path: Path
) -> None:
    out = tmp_path / "sleeper.out"
    task_arn = run(aws, cluster, task_definition, {"OUT_FILE": str(out), "SLEEP": "60"}, ["sleep"])
    wait_for("the task process to start", out.exists)
    running = aws("ecs").describe_tasks(cluster=cluster, tasks=[task_arn])["tasks"][0]
    assert running["lastStatus"] == "RUNNING"
    started = time.monotonic()
    aws("ecs").stop_task(cluster=cluster, task=task_arn, reason="smoke test says stop")
    task = stopped(aws, cluster, task_arn, timeout=10)
    assert time.monotonic() - started < 5
    assert task["stoppedReason"] == "smoke test says stop"
    assert task["stopCode"] == "UserInitiated"
    assert task["containers"][0]["exitCode"] == 143  # SIGTERM, as Docker reports it


def test_step_functions_run_task_wait_for_task_token(
    aws: Callable[[str], Any], cluster: str, image_map: Callable[[str, list[str]], None], unique: str
) -> None:
    image = "live-ci-smoke-sfn-task"
    # boto3 stands in for the ecs-task binary's SDK. The task runs as the image's user
    # (uid 10001), who cannot reach this venv's interpreter (pyenv's, under root's
    # home): the system's python3 runs it with the venv's pure-Python packages.
    system_python = shutil.which("python3", path="/usr/bin:/bin")
    if system_python is None:
        pytest.fail("no /usr/bin/python3 for the ECS task user to run the stand-in task with")
    packages = sysconfig.get_paths()["purelib"]
    image_map(image, ["/usr/bin/env", f"PYTHONPATH={packages}", system_python, str(FIXTURES / "task_success.py")])
    definition_arn = aws("ecs").register_task_definition(
        family="smoke-sfn",
        networkMode="awsvpc",
        requiresCompatibilities=["FARGATE"],
        cpu="256",
        memory="512",
        containerDefinitions=[{"name": "terra-run", "image": f"{image}:latest", "essential": True}],
    )["taskDefinition"]["taskDefinitionArn"]
    definition = {
        "StartAt": "Plan",
        "States": {
            "Plan": {
                "Type": "Task",
                "Resource": "arn:aws:states:::ecs:runTask.waitForTaskToken",
                "Parameters": {
                    "Cluster": cluster,
                    "TaskDefinition": definition_arn,
                    "LaunchType": "FARGATE",
                    "NetworkConfiguration": {
                        "AwsvpcConfiguration": {"Subnets": ["subnet-0local"], "SecurityGroups": ["sg-0local"]}
                    },
                    "Overrides": {
                        "ContainerOverrides": [
                            {
                                "Name": "terra-run",
                                "Command": ["plan"],
                                "Environment": [
                                    {"Name": "TASK_TOKEN", "Value.$": "$$.Task.Token"},
                                    {"Name": "UNIT", "Value.$": "$.unit"},
                                ],
                            }
                        ]
                    },
                },
                "TimeoutSeconds": 30,
                "End": True,
            }
        },
    }
    sfn = aws("stepfunctions")
    machine = sfn.create_state_machine(
        name=unique, definition=json.dumps(definition), roleArn="arn:aws:iam::000000000000:role/sfn"
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"unit": "dev/vpc"}))["executionArn"]

    def finished() -> dict[str, Any] | None:
        described = sfn.describe_execution(executionArn=execution)
        return described if described["status"] != "RUNNING" else None

    described = wait_for("the execution to finish", finished, timeout=30)
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"]) == {"argv": ["plan"], "unit": "dev/vpc"}
