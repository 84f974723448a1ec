"""Terraform (the offline AWS provider) applies the resources examples/local will
use into the local cloud, `plan` then shows no drift, and what it created runs.

Opt-in (about 2 minutes, mostly the provider's RDS and ECS waiters):
`LIVE_CI_SMOKE_TERRAFORM=1 scripts/local-cloud.sh smoke -k terraform`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from conftest import FIXTURES, wait_for
from test_lambda import zipped

PLUGIN_MIRROR = Path("/opt/tf-plugins")

pytestmark = pytest.mark.skipif(
    os.environ.get("LIVE_CI_SMOKE_TERRAFORM") != "1", reason="opt-in: LIVE_CI_SMOKE_TERRAFORM=1 (about 2 minutes)"
)


def terraform(workdir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["terraform", f"-chdir={workdir}", *args], env=env, capture_output=True, text=True, timeout=600
    )


def test_apply_then_plan_shows_no_drift_and_the_resources_run(
    aws: Callable[[str], Any],
    endpoint: str,
    image_map: Callable[[str, list[str]], None],
    unique: str,
    tmp_path: Path,
) -> None:
    if shutil.which("terraform") is None or not PLUGIN_MIRROR.is_dir():
        pytest.skip("terraform or its provider mirror is not installed")
    workdir = tmp_path / "tf"
    shutil.copytree(FIXTURES / "terraform", workdir)
    (tmp_path / "fn.zip").write_bytes(zipped({"bootstrap": (FIXTURES / "bootstrap").read_text()}))
    image = f"{unique}-terra-run"
    image_map(image, ["bash", str(FIXTURES / "ecs_task.sh")])
    # The machine points TF_CLI_CONFIG_FILE at a missing file: our own, offline.
    rc = tmp_path / "terraformrc"
    rc.write_text(f'provider_installation {{\n  filesystem_mirror {{\n    path = "{PLUGIN_MIRROR}"\n  }}\n}}\n')
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": str(rc),
        "TF_IN_AUTOMATION": "1",
        "TF_VAR_endpoint": endpoint,
        "TF_VAR_name": unique,
        "TF_VAR_lambda_zip": str(tmp_path / "fn.zip"),
        "TF_VAR_task_image": f"{image}:1",
    }
    init = terraform(workdir, env, "init", "-input=false", "-no-color")
    assert init.returncode == 0, init.stderr
    started = time.monotonic()
    apply = terraform(workdir, env, "apply", "-auto-approve", "-input=false", "-no-color")
    assert apply.returncode == 0, apply.stdout[-3000:] + apply.stderr
    print(f"\nterraform apply: {time.monotonic() - started:.0f} s")
    plan = terraform(workdir, env, "plan", "-detailed-exitcode", "-input=false", "-no-color")
    assert plan.returncode == 0, plan.stdout[-4000:] + plan.stderr

    outputs = json.loads(terraform(workdir, env, "output", "-json").stdout)
    host = urlparse(outputs["function_url"]["value"]).netloc
    request = urllib.request.Request(
        f"{endpoint}/vote", data=b"{}", method="POST", headers={"Host": host, "Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=15) as response:
        assert json.loads(response.read())["greeting"] == "from terraform"

    out = tmp_path / "task.out"
    task_arn = aws("ecs").run_task(
        cluster=outputs["cluster_arn"]["value"],
        taskDefinition=outputs["task_definition_arn"]["value"],
        launchType="FARGATE",
        networkConfiguration={"awsvpcConfiguration": {"subnets": ["subnet-0local"]}},
        overrides={
            "containerOverrides": [
                {
                    "name": "terra-run",
                    "environment": [
                        {"name": "OUT_FILE", "value": str(out)},
                        {"name": "RECORD", "value": "FROM_DEFINITION"},
                    ],
                }
            ]
        },
    )["tasks"][0]["taskArn"]

    def stopped() -> dict[str, Any] | None:
        task = aws("ecs").describe_tasks(cluster=outputs["cluster_arn"]["value"], tasks=[task_arn])["tasks"][0]
        return task if task["lastStatus"] == "STOPPED" else None

    task = wait_for("the task to stop", stopped)
    assert task["containers"][0]["exitCode"] == 0
    assert out.read_text().splitlines() == ["ARGS=terra-run", "FROM_DEFINITION=terraform"]
