"""No process outlives the local cloud: not on `scripts/local-cloud.sh down`, and
not when LocalStack dies without cleaning up (SIGKILL): the Lambda inits and
runtimes and the ECS tasks watch it and go by themselves. These run last, and only
when the smoke run started the cloud itself (they stop it)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import boto3
import pytest

from conftest import FIXTURES, owned_pids, wait_for
from test_lambda import zipped

SCRIPT = os.environ.get("LIVE_CI_LOCALCLOUD_SCRIPT", "")

pytestmark = [
    pytest.mark.teardown,
    pytest.mark.skipif(
        os.environ.get("LIVE_CI_LOCALCLOUD_SMOKE_OWNS") != "1",
        reason="the local cloud was already running: not stopping someone else's",
    ),
]


def cloud(command: str) -> dict[str, str]:
    """Run local-cloud.sh up/env and return the env it prints."""
    out = subprocess.run(["bash", SCRIPT, command], check=True, capture_output=True, text=True).stdout
    pairs = (line.removeprefix("export ").split("=", 1) for line in out.splitlines() if line.startswith("export "))
    return {name: value.strip("'") for name, value in pairs}


def alive(pids: set[int]) -> list[int]:
    """The pids that still run (a zombie has exited: it only waits for its reaper)."""
    running = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            running.append(pid)
    return running


def cmdlines(pids: set[int]) -> list[str]:
    lines = []
    for pid in sorted(pids):
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            pass
    return lines


def leave_processes_behind(
    endpoint: str, image_map: Callable[[str, list[str]], None], name: str, tmp_path: Path
) -> set[int]:
    """A warm Lambda environment and a running ECS task; returns the processes."""
    session = boto3.session.Session()
    lam = session.client("lambda", endpoint_url=endpoint)
    ecs = session.client("ecs", endpoint_url=endpoint)
    lam.create_function(
        FunctionName=name,
        Runtime="provided.al2023",
        Role="arn:aws:iam::000000000000:role/smoke",
        Handler="bootstrap",
        Code={"ZipFile": zipped({"bootstrap": (FIXTURES / "bootstrap").read_text()})},
    )
    wait_for("the function", lambda: lam.get_function(FunctionName=name)["Configuration"]["State"] == "Active")
    assert "FunctionError" not in lam.invoke(FunctionName=name, Payload=b"{}")
    image = "live-ci-smoke-sleeper"
    image_map(image, ["bash", str(FIXTURES / "ecs_task.sh")])
    ecs.create_cluster(clusterName=name)
    ecs.register_task_definition(family=name, containerDefinitions=[{"name": "sleeper", "image": image, "memory": 64}])
    out = tmp_path / f"{name}.out"
    env = [{"name": "OUT_FILE", "value": str(out)}, {"name": "SLEEP", "value": "300"}]
    ecs.run_task(
        cluster=name, taskDefinition=name, overrides={"containerOverrides": [{"name": "sleeper", "environment": env}]}
    )
    wait_for("the ECS task to start", out.exists)
    pids = owned_pids()
    running = cmdlines(pids)
    assert any("live_ci_localcloud.lambda_init" in c for c in running), running
    assert any(c.rstrip().endswith("/bootstrap") for c in running), running
    assert any("sleep 300" in c for c in running), running
    return pids


def test_down_leaves_no_processes(image_map: Callable[[str, list[str]], None], unique: str, tmp_path: Path) -> None:
    env = cloud("env")
    pids = leave_processes_behind(env["AWS_ENDPOINT_URL"], image_map, unique, tmp_path)
    started = time.monotonic()
    subprocess.run(["bash", SCRIPT, "down"], check=True)
    print(f"\nlocal cloud down in {time.monotonic() - started:.2f} s")
    assert cmdlines(owned_pids()) == []
    assert alive(pids) == []
    assert subprocess.run(["bash", SCRIPT, "status"], capture_output=True).returncode != 0


def test_processes_go_by_themselves_when_localstack_is_killed(
    image_map: Callable[[str, list[str]], None], unique: str, tmp_path: Path
) -> None:
    # After the down test: start it again, as a developer would.
    env = cloud("up")
    pids = leave_processes_behind(env["AWS_ENDPOINT_URL"], image_map, unique, tmp_path)
    localstack = int(Path(env["LIVE_CI_LOCALCLOUD_DIR"]).parent.joinpath("pid").read_text())
    # Only LocalStack itself, as a crash or an OOM kill would: nothing cleans up.
    os.kill(localstack, signal.SIGKILL)
    started = time.monotonic()
    # An exiting process has already dropped its environment (owned_pids no longer
    # lists it) but is not a zombie yet: wait for both, or a process caught mid-exit
    # reads as left behind.
    try:
        wait_for("every process of the local cloud to exit", lambda: not owned_pids() and not alive(pids), timeout=5)
    except AssertionError as timeout:
        raise AssertionError(f"{timeout}; still running: {cmdlines(owned_pids() | set(alive(pids)))}") from None
    print(f"\norphans gone {time.monotonic() - started:.2f} s after SIGKILL")
    # status sees the dead pid; down cleans up what is left (PostgreSQL, state files).
    assert subprocess.run(["bash", SCRIPT, "status"], capture_output=True).returncode != 0
    subprocess.run(["bash", SCRIPT, "down"], check=True, capture_output=True)
