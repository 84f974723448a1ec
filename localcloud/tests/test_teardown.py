"""`scripts/local-cloud.sh down` leaves no process behind: not LocalStack, not the
Lambda inits and runtimes, not ECS tasks (runs last; only when the smoke run
started the cloud itself)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, owned_pids, wait_for
from test_lambda import create_function, invoke, zipped


def cmdlines(pids: set[int]) -> list[str]:
    lines = []
    for pid in sorted(pids):
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            pass
    return lines


@pytest.mark.teardown
def test_down_leaves_no_processes(
    aws: Callable[[str], Any],
    role_arn: str,
    image_map: Callable[[str, list[str]], None],
    unique: str,
    tmp_path: Path,
) -> None:
    if os.environ.get("LIVE_CI_LOCALCLOUD_SMOKE_OWNS") != "1":
        pytest.skip("the local cloud was already running: not stopping someone else's")
    # Something to leave behind: a warm Lambda environment and a running ECS task.
    create_function(aws, unique, role_arn, zipped({"bootstrap": (FIXTURES / "bootstrap").read_text()}))
    assert invoke(aws, unique, {"warm": True})[1] is None
    image = "live-ci-smoke-sleeper"
    image_map(image, ["bash", str(FIXTURES / "ecs_task.sh")])
    ecs = aws("ecs")
    ecs.create_cluster(clusterName=unique)
    ecs.register_task_definition(
        family=unique, containerDefinitions=[{"name": "sleeper", "image": image, "memory": 64}]
    )
    out = tmp_path / "sleeper.out"
    ecs.run_task(
        cluster=unique,
        taskDefinition=unique,
        overrides={
            "containerOverrides": [
                {"name": "sleeper", "environment": [{"name": "OUT_FILE", "value": str(out)}, {"name": "SLEEP", "value": "300"}]}
            ]
        },
    )
    wait_for("the ECS task to start", out.exists)
    before = owned_pids()
    running = cmdlines(before)
    assert any("live_ci_localcloud.lambda_init" in c for c in running), running
    assert any(str(FIXTURES / "bootstrap") in c or c.endswith("/bootstrap ") for c in running), running
    assert any("sleep 300" in c for c in running), running

    started = time.monotonic()
    subprocess.run(["bash", os.environ["LIVE_CI_LOCALCLOUD_SCRIPT"], "down"], check=True)
    print(f"\nlocal cloud down in {time.monotonic() - started:.2f} s")
    assert cmdlines(owned_pids()) == []
    assert [pid for pid in before if os.path.exists(f"/proc/{pid}")] == []
    status = subprocess.run(["bash", os.environ["LIVE_CI_LOCALCLOUD_SCRIPT"], "status"], capture_output=True)
    assert status.returncode != 0
