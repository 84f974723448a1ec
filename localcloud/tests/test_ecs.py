"""ECS tasks started through the ECS API, directly or by Step Functions, run as local
processes with the merged command and environment; their status and exit code show
in DescribeTasks and their output in CloudWatch Logs."""

from __future__ import annotations

import json
import shutil
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from conftest import FIXTURES, wait_for

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/live-ci-smoke-task"
ECS_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}


@pytest.fixture(scope="module")
def task_role(aws: Callable[[str], Any]) -> str:
    name = f"smoke-task-{int(time.time() * 1000)}"
    return aws("iam").create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(ECS_TRUST))["Role"]["Arn"]


@pytest.fixture(scope="module")
def cluster(aws: Callable[[str], Any]) -> str:
    return aws("ecs").create_cluster(clusterName=f"smoke-{int(time.time())}")["cluster"]["clusterArn"]


@pytest.fixture(scope="module")
def task_definition(aws: Callable[[str], Any], image_map: Callable[[str, list[str]], None], task_role: str) -> str:
    image_map(IMAGE, ["bash", str(FIXTURES / "ecs_task.sh")])
    # The Fargate shape Terraform writes: memory at the task level only.
    return aws("ecs").register_task_definition(
        family="smoke-terra-run",
        taskRoleArn=task_role,
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
    aws: Callable[[str], Any], cluster: str, task_definition: str, tmp_path: Path, endpoint: str, task_role: str
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
            "CREDENTIALS_OUT": str(tmp_path / "credentials.json"),
            "RECORD": "FROM_DEFINITION OVERRIDDEN AWS_ENDPOINT_URL AWS_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY "
            "AWS_CONTAINER_CREDENTIALS_FULL_URI UID LIVE_CI_CHILD_UID",
        },
        ["terra-run", "--unit", "dev/vpc app"],
    )
    task = stopped(aws, cluster, task_arn)
    print(f"\nECS task: RunTask to STOPPED in {time.monotonic() - started:.2f} s")
    assert task["containers"][0]["exitCode"] == 3
    assert task["stopCode"] == "EssentialContainerExited"
    assert task["stoppedReason"] == "Essential container in task exited"
    recorded = dict(line.split("=", 1) for line in out.read_text().splitlines())
    credentials_uri = recorded.pop("AWS_CONTAINER_CREDENTIALS_FULL_URI")
    assert credentials_uri.startswith(f"{endpoint}/_live_ci/ecs-credentials/")
    assert recorded == {
        "ARGS": "terra-run --unit dev/vpc app",
        "FROM_DEFINITION": "definition",
        "OVERRIDDEN": "override",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": "us-east-1",
        # As on Fargate: no key in the environment, the task role's from the endpoint.
        "AWS_ACCESS_KEY_ID": "",
        "AWS_SECRET_ACCESS_KEY": "",
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
    # The container credentials endpoint: the task role, assumed with the task id as
    # its session name, as ECS does.
    credentials = json.loads((tmp_path / "credentials.json").read_text())
    assert credentials["RoleArn"] == task_role
    assert credentials["Expiration"].endswith("Z")
    identity = boto3.client(
        "sts",
        endpoint_url=endpoint,
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["Token"],
    ).get_caller_identity()
    assert identity["Arn"] == f"arn:aws:sts::000000000000:assumed-role/{task_role.rsplit('/', 1)[-1]}/{task_id}"
    # The stopped task's secret no longer answers.
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(credentials_uri)
    assert gone.value.code == 404


def test_a_task_without_a_task_role_gets_no_credentials(
    aws: Callable[[str], Any], cluster: str, image_map: Callable[[str, list[str]], None], tmp_path: Path
) -> None:
    image_map(IMAGE, ["bash", str(FIXTURES / "ecs_task.sh")])
    definition = aws("ecs").register_task_definition(
        family="smoke-no-role",
        networkMode="awsvpc",
        requiresCompatibilities=["FARGATE"],
        cpu="256",
        memory="512",
        containerDefinitions=[{"name": "terra-run", "image": f"{IMAGE}:1.0", "essential": True}],
    )["taskDefinition"]["taskDefinitionArn"]
    out = tmp_path / "task.out"
    names = "AWS_ACCESS_KEY_ID AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"
    task_arn = run(aws, cluster, definition, {"OUT_FILE": str(out), "RECORD": names}, ["x"])
    stopped(aws, cluster, task_arn)
    recorded = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert {name: recorded[name] for name in names.split()} == dict.fromkeys(names.split(), "")


def test_the_credentials_endpoint_answers_only_a_running_tasks_secret(endpoint: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{endpoint}/_live_ci/ecs-credentials/not-a-task-secret")
    assert refused.value.code == 404


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
    aws: Callable[[str], Any], cluster: str, image_map: Callable[[str, list[str]], None], unique: str, task_role: str
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
        # Its SDK finds the task role's credentials (the container credentials endpoint).
        taskRoleArn=task_role,
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
    # What the execution and the task need, as in AWS (and enforced when IAM is).
    machine_arn = f"arn:aws:states:us-east-1:000000000000:stateMachine:{unique}"
    sfn_trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "states.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    sfn_role = aws("iam").create_role(RoleName=f"{unique}-sfn", AssumeRolePolicyDocument=json.dumps(sfn_trust))["Role"][
        "Arn"
    ]
    allow = [
        {"Effect": "Allow", "Action": "ecs:RunTask", "Resource": definition_arn.rsplit(":", 1)[0] + ":*"},
        {"Effect": "Allow", "Action": "iam:PassRole", "Resource": task_role},
        # Step Functions watches (and on a timeout stops) the task it started.
        {"Effect": "Allow", "Action": ["ecs:DescribeTasks", "ecs:StopTask"], "Resource": "*"},
    ]
    aws("iam").put_role_policy(
        RoleName=f"{unique}-sfn",
        PolicyName="run",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": allow}),
    )
    # SendTaskSuccess has no resource type (SAR list_awsstepfunctions): "*".
    answer = [{"Effect": "Allow", "Action": "states:SendTaskSuccess", "Resource": "*"}]
    aws("iam").put_role_policy(
        RoleName=task_role.rsplit("/", 1)[-1],
        PolicyName=unique,
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": answer}),
    )
    sfn = aws("stepfunctions")
    machine = sfn.create_state_machine(name=unique, definition=json.dumps(definition), roleArn=sfn_role)[
        "stateMachineArn"
    ]
    assert machine == machine_arn
    execution = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"unit": "dev/vpc"}))["executionArn"]

    def finished() -> dict[str, Any] | None:
        described = sfn.describe_execution(executionArn=execution)
        return described if described["status"] != "RUNNING" else None

    described = wait_for("the execution to finish", finished, timeout=30)
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"]) == {"argv": ["plan"], "unit": "dev/vpc"}
