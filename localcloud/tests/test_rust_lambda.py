"""A real Rust `lambda_runtime` binary of this repo (trigger-sf) served by the
process executor: the Runtime API as the crate speaks it, its handler's error
as a function error, its tracing output in CloudWatch Logs.

Runs when the binary exists (`target/debug/trigger-sf`, which `cargo test` builds)
or `LIVE_CI_SMOKE_RUST_LAMBDA` names one; the smoke tests build nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
from test_lambda import create_function, invoke, zipped

REPO = Path(__file__).resolve().parents[2]


def rust_lambda() -> Path | None:
    named = os.environ.get("LIVE_CI_SMOKE_RUST_LAMBDA")
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    candidate = Path(named) if named else target / "debug" / "trigger-sf"
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


@pytest.mark.skipif(rust_lambda() is None, reason="no built trigger-sf (target/debug/trigger-sf)")
def test_trigger_sf_binary_answers_through_the_runtime_api(
    aws: Callable[[str], Any], role_arn: str, unique: str
) -> None:
    binary = rust_lambda()
    assert binary is not None
    # A bootstrap that execs the binary in place: debug builds are hundreds of MB,
    # not worth zipping and unzipping per deploy.
    bootstrap = f"#!/bin/sh\nexec {binary}\n"
    create_function(
        aws,
        unique,
        role_arn,
        zipped({"bootstrap": bootstrap}),
        Timeout=10,
        Environment={
            "Variables": {
                "MERGE_LOCK_SSM_KEY": "/live-ci/merge-lock",
                "METADB_URL": os.environ["LIVE_CI_PG_URL"],
                "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:000000000000:stateMachine:smoke",
            }
        },
    )
    result, error = invoke(aws, unique, {"neither": "a status change nor a run"})
    # trigger-sf's own input validation answered: the binary ran its handler.
    assert error == "Unhandled", result
    assert "is neither a status-change event" in result["errorMessage"]
    logs = aws("logs")

    def tracing_lines() -> list[str]:
        try:
            events = logs.filter_log_events(logGroupName=f"/aws/lambda/{unique}")["events"]
        except logs.exceptions.ResourceNotFoundException:
            return []  # LocalStack creates the group when it ships the first logs
        return [e["message"] for e in events if e["message"].startswith("{")]

    # Lambda ships logs asynchronously; a loaded machine (the test build runs beside
    # this suite) takes longer than the default 15 s. The wait ends at the first line.
    lines = wait_for("trigger-sf's JSON log lines in CloudWatch Logs", tracing_lines, timeout=60)
    assert json.loads(lines[0])["level"] == "ERROR"
    aws("lambda").delete_function(FunctionName=unique)
