"""Start-up smoke tests of the local cloud, run by `scripts/local-cloud.sh smoke`
(and so by `make test`) against the real LocalStack with the plugin enabled.

The environment is what `scripts/local-cloud.sh up` prints for any client
(AWS_ENDPOINT_URL, fake credentials, region, LIVE_CI_LOCAL_IMAGE_MAP, ...).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The teardown test stops the cloud: it must run last.
    items.sort(key=lambda item: item.get_closest_marker("teardown") is not None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "teardown: stops the local cloud; runs last")


@pytest.fixture(scope="session")
def endpoint() -> str:
    value = os.environ.get("AWS_ENDPOINT_URL")
    if not value:
        pytest.fail("AWS_ENDPOINT_URL is not set: run through scripts/local-cloud.sh smoke")
    return value


@pytest.fixture(scope="session")
def aws(endpoint: str) -> Callable[[str], Any]:
    session = boto3.session.Session()
    clients: dict[str, Any] = {}

    def client(service: str) -> Any:
        if service not in clients:
            clients[service] = session.client(service, endpoint_url=endpoint)
        return clients[service]

    return client


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A directory the tests' ECS tasks may write in: they run as the image's user
    (uid 10001, as on Fargate), and pytest's own temporary directories are root's
    alone. Anyone may add to it, as in /tmp."""
    path = Path(tempfile.mkdtemp(prefix="live-ci-smoke-"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def unique() -> str:
    return f"smoke-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def role_arn(aws: Callable[[str], Any]) -> str:
    name = f"smoke-lambda-{uuid.uuid4().hex[:8]}"
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    arn = aws("iam").create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    # What AWSLambdaBasicExecutionRole grants: Lambda writes a function's logs as its
    # role (enforced when IAM is).
    logs = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "*",
            }
        ],
    }
    aws("iam").put_role_policy(RoleName=name, PolicyName="basic-execution", PolicyDocument=json.dumps(logs))
    return arn


@pytest.fixture(scope="session")
def image_map() -> Iterator[Callable[[str, list[str]], None]]:
    """Adds entries to the running cloud's image map file (read on every RunTask)."""
    path = Path(os.environ["LIVE_CI_LOCAL_IMAGE_MAP"])
    added: list[str] = []

    def add(image: str, argv: list[str]) -> None:
        mapping = json.loads(path.read_text()) if path.is_file() else {}
        mapping[image] = argv
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(mapping, indent=2))
        tmp.replace(path)
        added.append(image)

    yield add
    if path.is_file():
        mapping = json.loads(path.read_text())
        for image in added:
            mapping.pop(image, None)
        path.write_text(json.dumps(mapping, indent=2))


def wait_for(what: str, check: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def owned_pids() -> set[int]:
    """Processes carrying the local cloud's owner variable for this work dir."""
    marker = f"LIVE_CI_LOCALCLOUD_OWNER={os.environ['LIVE_CI_LOCALCLOUD_DIR']}".encode()
    pids = set()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker in environ.read_bytes().split(b"\0"):
                pids.add(int(environ.parent.name))
        except OSError:
            continue
    pids.discard(os.getpid())
    return pids
