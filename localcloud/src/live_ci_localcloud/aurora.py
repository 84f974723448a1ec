"""Aurora Serverless v2 auto-pause, as the Data API meets it: a cluster whose minimum
capacity is 0 pauses after it has been idle, and the first Data API request after
that answers `DatabaseResumingException` (HTTP 400, "The Aurora DB instance <id> is
resuming after being auto-paused. Please wait a few seconds and try again.") until
the instance has resumed; the request that finds it paused starts the resume.

Off unless the local cloud is told how long a resume takes:
- `LIVE_CI_AURORA_RESUME_SECONDS` (default 0: clusters never pause);
- `LIVE_CI_AURORA_IDLE_SECONDS`: idle time before a pause (default: the cluster's
  `SecondsUntilAutoPause`, else AWS's default of 300).
`PUT /_live_ci/aurora` with `{"resume_seconds": s, "idle_seconds": s}` changes both
at run time (tests); `GET` answers the settings and each cluster's state.

Any Data API call naming the cluster is activity (an open transaction's calls too);
AWS pauses only an instance without connections, and the local Data API holds one
per open transaction, which its reaper closes after 3 idle minutes.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from localstack.runtime import hooks

from live_ci_localcloud.rds_data_backend import DataApiError

LOG = logging.getLogger(__name__)
PATH = "/_live_ci/aurora"
DEFAULT_IDLE_SECONDS = 300.0


def _env_seconds(name: str) -> float | None:
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        LOG.error("%s=%r is not a number of seconds; ignored", name, value)
        return None


@dataclass
class _Cluster:
    last_used: float
    resumes_at: float | None = None


class AutoPause:
    """Per-cluster idle/paused/resuming state, on an injectable clock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.lock = threading.Lock()
        self.clusters: dict[str, _Cluster] = {}
        self.resume_seconds = _env_seconds("LIVE_CI_AURORA_RESUME_SECONDS") or 0.0
        self.idle_seconds = _env_seconds("LIVE_CI_AURORA_IDLE_SECONDS")

    def configure(self, resume_seconds: float | None, idle_seconds: float | None) -> None:
        with self.lock:
            if resume_seconds is not None:
                self.resume_seconds = max(0.0, float(resume_seconds))
            self.idle_seconds = None if idle_seconds is None else max(0.0, float(idle_seconds))

    def check(
        self,
        cluster_arn: str,
        instance: str,
        min_capacity: float | None,
        auto_pause: float | None,
        connected: bool = False,
    ) -> None:
        """Records a request to the cluster; raises DatabaseResumingException while
        it resumes from a pause. `connected`: the call is on an open transaction,
        whose connection kept the instance from pausing."""
        now = self.clock()
        with self.lock:
            state = self.clusters.get(cluster_arn)
            if state is None or connected:
                # A cluster is available when created (and on its first local use).
                self.clusters[cluster_arn] = _Cluster(last_used=now)
                return
            pauses = self.resume_seconds > 0 and min_capacity == 0
            if pauses and state.resumes_at is None:
                idle = self.idle_seconds if self.idle_seconds is not None else (auto_pause or DEFAULT_IDLE_SECONDS)
                if now - state.last_used >= idle:
                    state.resumes_at = now + self.resume_seconds
                    LOG.info(
                        "Aurora %s: paused after %.1f s idle; resuming for %.1f s",
                        cluster_arn,
                        now - state.last_used,
                        self.resume_seconds,
                    )
            if state.resumes_at is not None:
                if now < state.resumes_at:
                    raise DataApiError(
                        "DatabaseResumingException",
                        f"The Aurora DB instance {instance} is resuming after being auto-paused. "
                        "Please wait a few seconds and try again.",
                        400,
                    )
                state.resumes_at = None
            state.last_used = now

    def document(self) -> dict[str, Any]:
        now = self.clock()
        with self.lock:
            return {
                "resume_seconds": self.resume_seconds,
                "idle_seconds": self.idle_seconds,
                "clusters": {
                    arn: {
                        "idle_seconds": round(now - c.last_used, 3),
                        "resuming": c.resumes_at is not None and now < c.resumes_at,
                    }
                    for arn, c in self.clusters.items()
                },
            }


PAUSE = AutoPause()


def scaling(cluster: Any) -> tuple[float | None, float | None]:
    """(MinCapacity, SecondsUntilAutoPause) of a moto cluster's Serverless v2 scaling."""
    config = getattr(cluster, "serverless_v2_scaling_configuration", None) or {}

    def read(*keys: str) -> float | None:
        for key in keys:
            if config.get(key) is not None:
                return float(config[key])
        return None

    return read("MinCapacity", "min_capacity"), read("SecondsUntilAutoPause", "seconds_until_auto_pause")


def writer_instance(cluster: Any) -> str:
    """The name AWS's message gives: the cluster's (first) instance, else the cluster."""
    try:
        for instance in cluster.backend.databases.values():
            if getattr(instance, "db_cluster_identifier", None) == cluster.db_cluster_identifier:
                return instance.db_instance_identifier
    except Exception:  # noqa: BLE001 - moto internals: the cluster's name will do
        pass
    return cluster.db_cluster_identifier


_installed = False


@hooks.on_infra_start()
def install_aurora_endpoint() -> None:
    """The `localstack.hooks.on_infra_start` entry point: the settings endpoint."""
    global _installed
    if _installed:
        return
    from localstack.http import Request, Response, route
    from localstack.services.edge import ROUTER

    class Endpoint:
        @route(PATH, methods=["GET"])
        def get(self, request: Request) -> Response:
            return Response(json.dumps(PAUSE.document()), mimetype="application/json")

        @route(PATH, methods=["PUT"])
        def put(self, request: Request) -> Response:
            try:
                body = json.loads(request.get_data() or b"{}")
                PAUSE.configure(body.get("resume_seconds"), body.get("idle_seconds"))
            except (ValueError, TypeError, AttributeError) as e:
                return Response(json.dumps({"error": f"bad settings: {e}"}), 400, mimetype="application/json")
            return Response(json.dumps(PAUSE.document()), mimetype="application/json")

    ROUTER.add(Endpoint())
    _installed = True
    LOG.info("live-ci Aurora auto-pause: resume %.1f s", PAUSE.resume_seconds)
