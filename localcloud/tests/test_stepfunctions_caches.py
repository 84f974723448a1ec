"""The Step Functions interpreter's caches (live_ci_localcloud.stepfunctions): a JSONPath
expression and a definition are parsed once and still evaluate each execution's own
data, also concurrently; an assumed-role client is reused per service, region and role
only, and rebuilt once stale; the running cloud has them installed."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from live_ci_localcloud import stepfunctions


def test_a_jsonpath_is_parsed_once_and_still_reads_each_documents_own_data(monkeypatch: pytest.MonkeyPatch) -> None:
    from localstack.services.stepfunctions.asl.utils import json_path

    real = json_path.parse
    parsed: list[str] = []

    def counting(path: str) -> Any:
        parsed.append(path)
        return real(path)

    monkeypatch.setattr(json_path, "parse", stepfunctions.cached_parser(counting))
    first = {"execution_id": "e-1", "plan": {"to_add": 3}}
    second = {"execution_id": "e-2", "plan": {"to_add": 5}}
    assert json_path.extract_json("$.execution_id", first) == "e-1"
    assert json_path.extract_json("$.execution_id", second) == "e-2"
    assert json_path.extract_json("$.plan.to_add", second) == 5
    assert json_path.extract_json("$.plan.to_add", first) == 3
    assert parsed == ["$.execution_id", "$.plan.to_add"]
    with pytest.raises(json_path.NoSuchJsonPathError):
        json_path.extract_json("$.plan.to_change", first)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_assumed_role_clients_are_reused_per_service_region_and_role_until_stale() -> None:
    made: list[tuple[str, str, str]] = []

    def make(*, service: str, region: str, state_credentials: Any) -> object:
        made.append((service, region, state_credentials.role_arn))
        return object()

    clock = Clock()
    cache = stepfunctions.ClientCache(make, ttl=600.0, clock=clock)
    role = SimpleNamespace(role_arn="arn:aws:iam::111111111111:role/live-ci-sfn")
    other_role = SimpleNamespace(role_arn="arn:aws:iam::222222222222:role/live-ci-sfn")
    ecs = cache("ecs", "us-east-1", role)
    assert cache("ecs", "us-east-1", role) is ecs
    assert cache("ecs", "eu-west-1", role) is not ecs
    assert cache("ecs", "us-east-1", other_role) is not ecs
    assert cache("sqs", "us-east-1", role) is not ecs
    clock.now += 599.0
    assert cache("ecs", "us-east-1", role) is ecs
    clock.now += 2.0
    renewed = cache("ecs", "us-east-1", role)
    assert renewed is not ecs
    assert cache("ecs", "us-east-1", role) is renewed
    assert made == [
        ("ecs", "us-east-1", "arn:aws:iam::111111111111:role/live-ci-sfn"),
        ("ecs", "eu-west-1", "arn:aws:iam::111111111111:role/live-ci-sfn"),
        ("ecs", "us-east-1", "arn:aws:iam::222222222222:role/live-ci-sfn"),
        ("sqs", "us-east-1", "arn:aws:iam::111111111111:role/live-ci-sfn"),
        ("ecs", "us-east-1", "arn:aws:iam::111111111111:role/live-ci-sfn"),
    ]


def test_concurrent_first_calls_make_one_client() -> None:
    made: list[str] = []
    release = threading.Event()

    def make(*, service: str, region: str, state_credentials: Any) -> object:
        made.append(service)
        release.wait(5)
        return object()

    cache = stepfunctions.ClientCache(make)
    role = SimpleNamespace(role_arn="arn:aws:iam::111111111111:role/live-ci-sfn")
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(cache("ecs", "us-east-1", role))) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)
    release.set()
    for thread in threads:
        thread.join(5)
    assert made == ["ecs"]
    assert len(got) == 4 and all(client is got[0] for client in got)


def test_a_definition_is_parsed_once_per_text() -> None:
    stepfunctions.install()
    from localstack.services.stepfunctions.asl.parse.asl_parser import AmazonStateLanguageParser
    from localstack.services.stepfunctions.backend.execution_worker import ExecutionWorker

    def worker(definition: str) -> SimpleNamespace:
        details = SimpleNamespace(state_machine_details=SimpleNamespace(definition=definition))
        return SimpleNamespace(_evaluation_details=details)

    stamp = str(time.time())
    a = json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True, "Comment": stamp}}})
    b = json.dumps({"StartAt": "B", "States": {"B": {"Type": "Pass", "End": True, "Comment": stamp}}})
    before = AmazonStateLanguageParser.parse.cache_info().misses
    first = ExecutionWorker._get_evaluation_entrypoint(worker(a))
    assert ExecutionWorker._get_evaluation_entrypoint(worker(a)) is first
    assert ExecutionWorker._get_evaluation_entrypoint(worker(b)) is not first
    assert AmazonStateLanguageParser.parse.cache_info().misses == before + 2


def test_concurrent_executions_of_one_definition_each_compute_their_own_output(
    aws: Callable[[str], Any], role_arn: str, unique: str
) -> None:
    # One parsed Program, JSONPaths and a Choice evaluated by several executions at once.
    definition = {
        "StartAt": "Shape",
        "States": {
            "Shape": {
                "Type": "Pass",
                "Parameters": {"unit.$": "$.unit", "double.$": "States.MathAdd($.n, $.n)", "n.$": "$.n"},
                "Next": "Big",
            },
            "Big": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.n", "NumericGreaterThan": 2, "Next": "Large"}],
                "Default": "Small",
            },
            "Large": {"Type": "Pass", "Result": "large", "ResultPath": "$.size", "End": True},
            "Small": {"Type": "Pass", "Result": "small", "ResultPath": "$.size", "End": True},
        },
    }
    sfn = aws("stepfunctions")
    machine = sfn.create_state_machine(name=unique, definition=json.dumps(definition), roleArn=role_arn)[
        "stateMachineArn"
    ]
    runs = {
        sfn.start_execution(stateMachineArn=machine, name=f"{unique}-{n}", input=json.dumps({"unit": f"u{n}", "n": n}))[
            "executionArn"
        ]: n
        for n in range(6)
    }
    deadline = time.monotonic() + 30
    outputs: dict[int, Any] = {}
    while len(outputs) < len(runs) and time.monotonic() < deadline:
        for arn, n in runs.items():
            described = sfn.describe_execution(executionArn=arn)
            if described["status"] == "SUCCEEDED":
                outputs[n] = json.loads(described["output"])
            else:
                assert described["status"] == "RUNNING", described
        time.sleep(0.1)
    assert outputs == {
        n: {"unit": f"u{n}", "double": 2 * n, "n": n, "size": "large" if n > 2 else "small"} for n in range(6)
    }


def test_install_reaches_every_integration_that_assumes_the_role_and_every_parser() -> None:
    stepfunctions.install()
    from localstack.services.stepfunctions.asl.component.common.path import result_path
    from localstack.services.stepfunctions.asl.component.state.state_execution.state_task.service import (
        state_task_service_ecs,
        state_task_service_sns,
        state_task_service_sqs,
    )
    from localstack.services.stepfunctions.asl.utils import json_path

    for module in (state_task_service_ecs, state_task_service_sns, state_task_service_sqs):
        assert isinstance(module.boto_client_for, stepfunctions.ClientCache), module.__name__
    for module in (json_path, result_path):
        assert hasattr(module.parse, "cache_info"), module.__name__
    from localstack.services.stepfunctions.asl.parse.asl_parser import AmazonStateLanguageParser

    assert hasattr(AmazonStateLanguageParser.parse, "cache_info")


def test_the_definition_parsed_when_a_state_machine_is_created_serves_its_executions() -> None:
    stepfunctions.install()
    from localstack.services.stepfunctions.asl.parse.asl_parser import AmazonStateLanguageParser
    from localstack.services.stepfunctions.asl.static_analyser.static_analyser import StaticAnalyser
    from localstack.services.stepfunctions.backend import execution_worker

    definition = json.dumps({"StartAt": "Only", "States": {"Only": {"Type": "Pass", "Comment": str(time.time())}}})

    class Walk(StaticAnalyser):
        pass

    Walk().analyse(definition)  # as CreateStateMachine validates it
    parse = AmazonStateLanguageParser.parse
    before = parse.cache_info()
    program, _tree = execution_worker.AmazonStateLanguageParser.parse(definition)
    after = parse.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)
    assert parse(definition)[0] is program


def test_the_running_cloud_installed_the_caches_at_start() -> None:
    # The hook runs inside LocalStack's process; its start-up log is the evidence.
    state = os.environ.get("LIVE_CI_LOCALCLOUD_DIR")
    if not state:
        pytest.fail("LIVE_CI_LOCALCLOUD_DIR is not set: run through scripts/local-cloud.sh smoke")
    log = Path(state).parent / "log"
    assert "live-ci: step functions caches installed" in log.read_text(errors="replace"), log
