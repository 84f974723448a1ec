"""The RDS Data API (`rds-data`), which core LocalStack answers with 501, served by
the local PostgreSQL of scripts/pg.sh: ExecuteStatement, BatchExecuteStatement and
Begin/Commit/RollbackTransaction, with AWS's limits (see rds_data_backend.py).

A request names an Aurora cluster (moto's RDS, as Terraform created it) and a
Secrets Manager secret (`{"username", "password"}`, the managed master secret or
one of your own), as in AWS:
- an unknown cluster, or one without `EnableHttpEndpoint`, answers
  `HttpEndpointNotEnabledException`; an unknown secret `SecretsErrorException`,
  one without a username `InvalidSecretException`;
- the database is the request's `database`, else the cluster's `DatabaseName`;
- the server is `LIVE_CI_RDS_DATA_PG_URL`, else the URL scripts/pg.sh wrote to
  `LIVE_CI_PG_URL_FILE` (read per request: PostgreSQL may start after LocalStack),
  with its TLS settings (`sslmode`, `sslrootcert`) kept.
On a cluster's first use its master user and database are created on that server
(RDS creates both with the cluster; locally nothing runs until a request needs it),
with the cluster's master password (the managed secret's, else MasterUserPassword).
The master user is a superuser here (Aurora's has rds_superuser): a database made
beforehand by another role, as the local deployment's, stays usable.
Any other user is only what the database holds, as on Aurora: it must exist, and
its password is checked by PostgreSQL itself (scripts/pg.sh: scram-sha-256 for
every TCP login but the server's own `postgres`). A wrong password or an unknown
user answers Aurora's BadRequestException `FATAL: password authentication failed
for user "<name>"`. So a job's restricted role (migration 0015) gets here exactly
what it gets on Aurora.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import psycopg
from localstack.aws.api import CommonServiceException, RequestContext, ServiceRequest
from localstack.aws.skeleton import DispatchTable, Skeleton
from localstack.aws.spec import load_service
from localstack.services.plugins import Service, ServiceLifecycleHook
from moto.rds.models import rds_backends
from moto.secretsmanager.models import secretsmanager_backends
from psycopg import sql as pgsql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from live_ci_localcloud import aurora
from live_ci_localcloud.rds import patch_moto
from live_ci_localcloud.rds_data_backend import DataApiBackend, DataApiError, Target

REAP_INTERVAL_SECONDS = 5.0


def server_url() -> str:
    url = os.environ.get("LIVE_CI_RDS_DATA_PG_URL", "").strip()
    if url:
        return url
    path = os.environ.get("LIVE_CI_PG_URL_FILE", "")
    if path and Path(path).is_file():
        url = Path(path).read_text().strip()
        if url:
            return url
    raise DataApiError(
        "DatabaseUnavailableException",
        "no PostgreSQL behind the local Data API: start scripts/pg.sh (or set LIVE_CI_RDS_DATA_PG_URL)",
        504,
    )


def _arn_parts(arn: str) -> tuple[str, str, str]:
    """(region, account, last segment) of `arn:aws:<svc>:<region>:<account>:…`."""
    parts = arn.split(":")
    if len(parts) < 7 or parts[0] != "arn":
        raise DataApiError("BadRequestException", f"invalid ARN {arn!r}")
    return parts[3], parts[4], parts[-1]


class Resolver:
    """Maps (cluster ARN, secret ARN, database) to a libpq connection string."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.provisioned: set[tuple[str, str, str]] = set()

    def __call__(self, resource_arn: str, secret_arn: str, database: str | None) -> Target:
        region, account, cluster_id = _arn_parts(resource_arn)
        cluster = rds_backends[account][region].clusters.get(cluster_id)
        if cluster is None or cluster.arn != resource_arn or not cluster.enable_http_endpoint:
            raise DataApiError(
                "HttpEndpointNotEnabledException", f"HttpEndpoint is not enabled for cluster {cluster_id}"
            )
        s_region, s_account, _ = _arn_parts(secret_arn)
        try:
            value = secretsmanager_backends[s_account][s_region].get_secret_value(secret_arn, None, None)
        except Exception as e:  # noqa: BLE001 - moto raises its own not-found types
            raise DataApiError("SecretsErrorException", f"cannot read secret {secret_arn}: {e}") from e
        try:
            secret = json.loads(value.get("SecretString") or "")
            username = secret["username"]
        except (ValueError, KeyError, TypeError) as e:
            raise DataApiError("InvalidSecretException", f"secret {secret_arn} holds no JSON with a username") from e
        dbname = database or cluster.database_name or "postgres"
        server = conninfo_to_dict(server_url())
        # Only the cluster's master user is made here (RDS makes it with the
        # cluster); every other user is the database's business.
        if username == cluster.master_username:
            self._provision(server, username, _master_password(cluster), dbname)
        params = {**server, "user": username, "dbname": dbname, "password": str(secret.get("password") or "")}
        return Target(conninfo=make_conninfo(**params))

    def _provision(self, server: dict[str, Any], username: str, password: str, dbname: str) -> None:
        key = (make_conninfo(**server), username, password, dbname)
        with self.lock:
            if key in self.provisioned:
                return
            try:
                with psycopg.connect(make_conninfo(**server), autocommit=True, connect_timeout=10) as admin:
                    role = pgsql.Identifier(username)
                    exists = admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (username,)).fetchone()
                    verb = "ALTER" if exists else "CREATE"
                    admin.execute(
                        pgsql.SQL(verb + " ROLE {} LOGIN SUPERUSER PASSWORD {}").format(role, pgsql.Literal(password))
                    )
                    if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone():
                        admin.execute(
                            pgsql.SQL("CREATE DATABASE {} OWNER {}").format(
                                pgsql.Identifier(dbname), pgsql.Identifier(username)
                            )
                        )
            except psycopg.Error as e:
                raise DataApiError(
                    "DatabaseUnavailableException", f"cannot prepare database {dbname!r}: {e}", 504
                ) from e
            self.provisioned.add(key)


def _master_password(cluster: Any) -> str:
    """The cluster's master password: its managed secret's, else the one given."""
    managed = getattr(cluster, "master_user_secret", None)
    if getattr(cluster, "manage_master_user_password", False) and managed is not None:
        try:
            region, account, _ = _arn_parts(managed.secret.arn)
            value = secretsmanager_backends[account][region].get_secret_value(managed.secret.arn, None, None)
            return str(json.loads(value.get("SecretString") or "")["password"])
        except Exception:  # noqa: BLE001 - moto's own not-found types; the given password then
            pass
    # moto keeps it privately (its property refuses to answer, as RDS does).
    return str(getattr(cluster, "_master_user_password", None) or "")


BACKEND = DataApiBackend(Resolver())


def _awake(request: ServiceRequest) -> None:
    """Aurora Serverless v2 auto-pause (aurora.py): a paused cluster answers
    DatabaseResumingException before the call reaches the database."""
    arn = request.get("resourceArn") or ""
    try:
        region, account, cluster_id = _arn_parts(arn)
    except DataApiError:
        return  # the resolver refuses it, with AWS's error
    cluster = rds_backends[account][region].clusters.get(cluster_id)
    if cluster is None or cluster.arn != arn:
        return
    min_capacity, auto_pause = aurora.scaling(cluster)
    aurora.PAUSE.check(
        arn, aurora.writer_instance(cluster), min_capacity, auto_pause, connected=bool(request.get("transactionId"))
    )


def _call(fn: Any, *args: Any, request: ServiceRequest | None = None) -> Any:
    try:
        if request is not None:
            _awake(request)
        return fn(*args)
    except DataApiError as e:
        raise CommonServiceException(e.code, e.message, status_code=e.status, sender_fault=e.status < 500) from e


def execute_statement(_context: RequestContext, request: ServiceRequest) -> Any:
    return _call(BACKEND.execute, dict(request), request=request)


def batch_execute_statement(_context: RequestContext, request: ServiceRequest) -> Any:
    return _call(BACKEND.batch, dict(request), request=request)


def begin_transaction(_context: RequestContext, request: ServiceRequest) -> Any:
    return _call(BACKEND.begin, request["resourceArn"], request["secretArn"], request.get("database"), request=request)


def commit_transaction(_context: RequestContext, request: ServiceRequest) -> Any:
    return _call(BACKEND.finish, request["transactionId"], True, request=request)


def rollback_transaction(_context: RequestContext, request: ServiceRequest) -> Any:
    return _call(BACKEND.finish, request["transactionId"], False, request=request)


def _not_implemented(_context: RequestContext, _request: ServiceRequest) -> Any:
    raise CommonServiceException(
        "BadRequestException",
        "the local Data API serves ExecuteStatement, BatchExecuteStatement and Begin/Commit/RollbackTransaction only",
    )


class RdsDataLifecycle(ServiceLifecycleHook):
    """Rolls back idle transactions even when nobody calls again, so their row
    locks go after 3 minutes as in AWS."""

    def __init__(self) -> None:
        self.stop = threading.Event()

    def on_after_init(self) -> None:
        def loop() -> None:
            while not self.stop.wait(REAP_INTERVAL_SECONDS):
                BACKEND.reap()

        threading.Thread(target=loop, name="rds-data-reaper", daemon=True).start()

    def on_before_stop(self) -> None:
        self.stop.set()
        BACKEND.close()


def create_service() -> Service:
    # The cluster's HttpEndpointEnabled as Terraform set it (moto keeps it for
    # Serverless v1 engines only).
    patch_moto()
    spec = load_service("rds-data")
    table: DispatchTable = {name: _not_implemented for name in spec.operation_names}
    table["ExecuteStatement"] = execute_statement
    table["BatchExecuteStatement"] = batch_execute_statement
    table["BeginTransaction"] = begin_transaction
    table["CommitTransaction"] = commit_transaction
    table["RollbackTransaction"] = rollback_transaction
    return Service("rds-data", skeleton=Skeleton(spec, table), lifecycle_hook=RdsDataLifecycle())
