"""The RDS Data API (`rds-data`) served by the plugin from the local PostgreSQL:
the calls the metadb's Data API adapter makes, through boto3 as any client, on a
cluster created through the RDS API with a Secrets Manager secret; the documented
limits (1 MiB response, transaction expiry, one call at a time per transaction).
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from botocore.exceptions import ClientError

from live_ci_localcloud.rds_data_backend import MAX_RESPONSE_BYTES, DataApiBackend, DataApiError, Target, to_pyformat


@pytest.fixture(scope="module")
def cluster(aws: Callable[[str], Any]) -> Iterator[dict[str, str]]:
    unique = f"smoke-data-{uuid.uuid4().hex[:8]}"
    rds = aws("rds")
    created = rds.create_db_cluster(
        DBClusterIdentifier=unique,
        Engine="aurora-postgresql",
        EngineVersion="15.4",
        MasterUsername="smoke_master",
        MasterUserPassword="smoke-password-1",
        DatabaseName=f"{unique.replace('-', '_')}_db",
        EnableHttpEndpoint=True,
        ServerlessV2ScalingConfiguration={"MinCapacity": 0.5, "MaxCapacity": 1},
    )["DBCluster"]
    secret = aws("secretsmanager").create_secret(
        Name=f"{unique}-metadb",
        SecretString=json.dumps({"username": "smoke_master", "password": "smoke-password-1"}),
    )["ARN"]
    yield {"resourceArn": created["DBClusterArn"], "secretArn": secret, "database": created["DatabaseName"]}
    rds.delete_db_cluster(DBClusterIdentifier=unique, SkipFinalSnapshot=True)


@pytest.fixture(scope="module")
def data(aws: Callable[[str], Any]) -> Any:
    return aws("rds-data")


@pytest.fixture(scope="module")
def table(data: Any, cluster: dict[str, str]) -> str:
    data.execute_statement(
        **cluster,
        sql="CREATE TABLE items (id bigint PRIMARY KEY, name text, score double precision,"
        " ok boolean, doc jsonb, at timestamptz DEFAULT now())",
    )
    return "items"


def error_code(e: ClientError) -> str:
    return e.response["Error"]["Code"]


def test_execute_with_parameters_and_json_records(data: Any, cluster: dict[str, str], table: str) -> None:
    out = data.execute_statement(
        **cluster,
        sql="INSERT INTO items (id, name, score, ok, doc) VALUES (:id, :name, :score, :ok, :doc)",
        parameters=[
            {"name": "id", "value": {"longValue": 1}},
            {"name": "name", "value": {"stringValue": "it's %s"}},
            {"name": "score", "value": {"doubleValue": 2.5}},
            {"name": "ok", "value": {"booleanValue": True}},
            {"name": "doc", "value": {"stringValue": '{"a": [1, 2]}'}, "typeHint": "JSON"},
        ],
    )
    assert out["numberOfRecordsUpdated"] == 1
    data.execute_statement(
        **cluster,
        sql="INSERT INTO items (id, name) VALUES (:id, :name)",
        parameters=[{"name": "id", "value": {"longValue": 2}}, {"name": "name", "value": {"isNull": True}}],
    )
    out = data.execute_statement(
        **cluster,
        sql="SELECT id, name, score, ok, doc, doc::text = :doc::text AS same FROM items WHERE id >= :min ORDER BY id",
        parameters=[
            {"name": "min", "value": {"longValue": 1}},
            {"name": "doc", "value": {"stringValue": '{"a": [1, 2]}'}},
        ],
        formatRecordsAs="JSON",
    )
    assert json.loads(out["formattedRecords"]) == [
        {"id": 1, "name": "it's %s", "score": 2.5, "ok": True, "doc": '{"a": [1, 2]}', "same": True},
        {"id": 2, "name": None, "score": None, "ok": None, "doc": None, "same": None},
    ]
    assert "records" not in out and out["numberOfRecordsUpdated"] == 0

    typed = data.execute_statement(
        **cluster, sql="SELECT id, name, ok FROM items WHERE id = 1", includeResultMetadata=True
    )
    assert typed["records"] == [[{"longValue": 1}, {"stringValue": "it's %s"}, {"booleanValue": True}]]
    assert [c["name"] for c in typed["columnMetadata"]] == ["id", "name", "ok"]


def test_sql_errors_carry_postgres_message_and_sqlstate(data: Any, cluster: dict[str, str], table: str) -> None:
    with pytest.raises(ClientError) as e:
        data.execute_statement(**cluster, sql="SELECT * FROM no_such_table")
    assert error_code(e.value) == "DatabaseErrorException"
    assert 'relation "no_such_table" does not exist' in str(e.value)
    assert "SQLState: 42P01" in str(e.value)


def test_transactions_commit_and_roll_back(data: Any, cluster: dict[str, str], table: str) -> None:
    def count() -> int:
        out = data.execute_statement(
            **cluster, sql="SELECT count(*) AS n FROM items WHERE id >= 100", formatRecordsAs="JSON"
        )
        return json.loads(out["formattedRecords"])[0]["n"]

    tx = data.begin_transaction(**cluster)["transactionId"]
    data.execute_statement(**cluster, transactionId=tx, sql="INSERT INTO items (id) VALUES (100)")
    assert count() == 0, "uncommitted rows are not visible outside the transaction"
    inside = data.execute_statement(
        **cluster, transactionId=tx, sql="SELECT count(*) AS n FROM items WHERE id >= 100", formatRecordsAs="JSON"
    )
    assert json.loads(inside["formattedRecords"]) == [{"n": 1}]
    commit = data.commit_transaction(
        resourceArn=cluster["resourceArn"], secretArn=cluster["secretArn"], transactionId=tx
    )
    assert commit["transactionStatus"] == "Transaction Committed"
    assert count() == 1

    tx = data.begin_transaction(**cluster)["transactionId"]
    data.execute_statement(**cluster, transactionId=tx, sql="INSERT INTO items (id) VALUES (101)")
    rollback = data.rollback_transaction(
        resourceArn=cluster["resourceArn"], secretArn=cluster["secretArn"], transactionId=tx
    )
    assert rollback["transactionStatus"] == "Rollback Complete"
    assert count() == 1
    # A finished transaction is gone.
    with pytest.raises(ClientError) as e:
        data.execute_statement(**cluster, transactionId=tx, sql="SELECT 1")
    assert error_code(e.value) == "TransactionNotFoundException"
    assert f"Transaction {tx} is not found" in str(e.value)


def test_an_error_ends_the_transaction(data: Any, cluster: dict[str, str], table: str) -> None:
    tx = data.begin_transaction(**cluster)["transactionId"]
    data.execute_statement(**cluster, transactionId=tx, sql="INSERT INTO items (id) VALUES (200)")
    with pytest.raises(ClientError):
        data.execute_statement(**cluster, transactionId=tx, sql="INSERT INTO items (id) VALUES (200)")
    with pytest.raises(ClientError) as e:
        data.commit_transaction(resourceArn=cluster["resourceArn"], secretArn=cluster["secretArn"], transactionId=tx)
    assert error_code(e.value) == "TransactionNotFoundException"
    out = data.execute_statement(
        **cluster, sql="SELECT count(*) AS n FROM items WHERE id = 200", formatRecordsAs="JSON"
    )
    assert json.loads(out["formattedRecords"]) == [{"n": 0}]


def test_batch_execute_statement(data: Any, cluster: dict[str, str], table: str) -> None:
    out = data.batch_execute_statement(
        **cluster,
        sql="INSERT INTO items (id, name) VALUES (:id, :name)",
        parameterSets=[
            [{"name": "id", "value": {"longValue": 300 + i}}, {"name": "name", "value": {"stringValue": f"n{i}"}}]
            for i in range(3)
        ],
    )
    assert len(out["updateResults"]) == 3
    # All or nothing: a duplicate key in the last set leaves none of the set's rows.
    with pytest.raises(ClientError) as e:
        data.batch_execute_statement(
            **cluster,
            sql="INSERT INTO items (id) VALUES (:id)",
            parameterSets=[
                [{"name": "id", "value": {"longValue": 400}}],
                [{"name": "id", "value": {"longValue": 300}}],
            ],
        )
    assert error_code(e.value) == "DatabaseErrorException"
    out = data.execute_statement(
        **cluster,
        sql="SELECT array_agg(id ORDER BY id)::text AS ids FROM items WHERE id >= 300",
        formatRecordsAs="JSON",
    )
    assert json.loads(out["formattedRecords"]) == [{"ids": "{300,301,302}"}]


def test_response_over_one_mib_is_refused(data: Any, cluster: dict[str, str]) -> None:
    under = data.execute_statement(
        **cluster,
        sql="SELECT repeat('x', :n) AS s",
        parameters=[{"name": "n", "value": {"longValue": 1000 * 1000}}],
        formatRecordsAs="JSON",
    )
    assert len(json.loads(under["formattedRecords"])[0]["s"]) == 1000 * 1000
    with pytest.raises(ClientError) as e:
        data.execute_statement(
            **cluster,
            sql="SELECT repeat('x', 1000) AS s FROM generate_series(1, :rows)",
            parameters=[{"name": "rows", "value": {"longValue": 1100}}],
            formatRecordsAs="JSON",
        )
    assert error_code(e.value) == "BadRequestException"
    assert "Database returned more than the allowed response size limit" in str(e.value)


def test_unknown_cluster_and_secret(data: Any, cluster: dict[str, str]) -> None:
    with pytest.raises(ClientError) as e:
        data.execute_statement(**{**cluster, "resourceArn": cluster["resourceArn"] + "-nope"}, sql="SELECT 1")
    assert error_code(e.value) == "HttpEndpointNotEnabledException"
    with pytest.raises(ClientError) as e:
        data.execute_statement(**{**cluster, "secretArn": cluster["secretArn"] + "-nope"}, sql="SELECT 1")
    assert error_code(e.value) == "SecretsErrorException"


# The transaction limits, on the backend itself with a clock the test moves (the
# real ones are 3 minutes idle and 24 hours in all).


def pg_url() -> str:
    return os.environ.get("LIVE_CI_PG_URL") or Path(os.environ["LIVE_CI_PG_URL_FILE"]).read_text().strip()


@pytest.fixture
def backend() -> Iterator[tuple[DataApiBackend, list[float]]]:
    now = [1000.0]
    b = DataApiBackend(lambda _r, _s, _d: Target(conninfo=pg_url()), clock=lambda: now[0])
    yield b, now
    b.close()


def test_idle_transaction_expires_and_releases_its_locks(backend: tuple[DataApiBackend, list[float]]) -> None:
    b, now = backend
    request = {"resourceArn": "arn", "secretArn": "arn"}
    name = f"expiry_{os.getpid()}"
    b.execute({**request, "sql": f"CREATE TABLE {name} (id int PRIMARY KEY)"})
    try:
        b.execute({**request, "sql": f"INSERT INTO {name} VALUES (1)"})
        tx = b.begin("arn", "arn", None)["transactionId"]
        b.execute({**request, "transactionId": tx, "sql": f"UPDATE {name} SET id = 2 WHERE id = 1"})
        now[0] += 179
        b.execute({**request, "transactionId": tx, "sql": "SELECT 1"})  # within 3 minutes of the last call
        now[0] += 181
        assert b.reap() == [tx]
        with pytest.raises(DataApiError) as e:
            b.execute({**request, "transactionId": tx, "sql": "SELECT 1"})
        assert (e.value.code, e.value.message) == ("TransactionNotFoundException", f"Transaction {tx} is not found")
        # Its row lock is gone and its update never happened.
        with psycopg.connect(pg_url(), autocommit=True) as c:
            c.execute("SET lock_timeout = '2s'")
            assert c.execute(f"UPDATE {name} SET id = 3 WHERE id = 1").rowcount == 1
        # And none lives past 24 hours, however busy.
        tx = b.begin("arn", "arn", None)["transactionId"]
        for _ in range(24 * 60 // 2 + 1):
            now[0] += 120
            b.reap()
        with pytest.raises(DataApiError):
            b.finish(tx, commit=True)
    finally:
        b.execute({**request, "sql": f"DROP TABLE {name}"})


def test_one_call_at_a_time_per_transaction(backend: tuple[DataApiBackend, list[float]]) -> None:
    b, _ = backend
    request = {"resourceArn": "arn", "secretArn": "arn"}
    tx = b.begin("arn", "arn", None)["transactionId"]
    started = threading.Event()
    done: list[Any] = []

    def slow() -> None:
        started.set()
        done.append(b.execute({**request, "transactionId": tx, "sql": "SELECT pg_sleep(1)"}))

    t = threading.Thread(target=slow)
    t.start()
    started.wait()
    time.sleep(0.3)
    with pytest.raises(DataApiError) as e:
        b.execute({**request, "transactionId": tx, "sql": "SELECT 1"})
    assert (e.value.code, e.value.message) == ("DatabaseErrorException", "Transaction is still running a query")
    t.join()
    assert done and b.finish(tx, commit=True)["transactionStatus"] == "Transaction Committed"


def test_named_parameters_skip_literals_casts_and_comments() -> None:
    sql, names = to_pyformat("SELECT ':a', \"x:y\", :b::int, 5 % 2 -- :c\n, $$ :d $$, :e", {"e": "JSON"})
    assert sql == "SELECT ':a', \"x:y\", %(b)s::int, 5 %% 2 -- :c\n, $$ :d $$, %(e)s::jsonb"
    assert names == ["b", "e"]
    assert MAX_RESPONSE_BYTES == 1024 * 1024


def _aurora(endpoint: str, settings: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(f"{endpoint}/_live_ci/aurora", data=json.dumps(settings).encode(), method="PUT")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def test_a_paused_serverless_v2_cluster_answers_database_resuming_until_it_resumed(
    aws: Callable[[str], Any], data: Any, endpoint: str, cluster: dict[str, str]
) -> None:
    unique = f"smoke-pause-{uuid.uuid4().hex[:8]}"
    rds = aws("rds")
    created = rds.create_db_cluster(
        DBClusterIdentifier=unique,
        Engine="aurora-postgresql",
        EngineVersion="16.3",
        MasterUsername="smoke_master",
        MasterUserPassword="smoke-password-1",
        DatabaseName=f"{unique.replace('-', '_')}_db",
        EnableHttpEndpoint=True,
        ServerlessV2ScalingConfiguration={"MinCapacity": 0, "MaxCapacity": 1, "SecondsUntilAutoPause": 300},
    )["DBCluster"]
    rds.create_db_instance(
        DBInstanceIdentifier=f"{unique}-1",
        DBClusterIdentifier=unique,
        Engine="aurora-postgresql",
        DBInstanceClass="db.serverless",
    )
    secret = aws("secretsmanager").create_secret(
        Name=f"{unique}-metadb",
        SecretString=json.dumps({"username": "smoke_master", "password": "smoke-password-1"}),
    )["ARN"]
    paused = {"resourceArn": created["DBClusterArn"], "secretArn": secret, "database": created["DatabaseName"]}
    _aurora(endpoint, {"resume_seconds": 2, "idle_seconds": 1})
    try:
        assert data.execute_statement(**paused, sql="SELECT 1")["numberOfRecordsUpdated"] == 0
        time.sleep(1.3)
        # Idle past the threshold: the next call finds it paused and starts the resume.
        started = time.monotonic()
        with pytest.raises(ClientError) as raised:
            data.execute_statement(**paused, sql="SELECT 1")
        error = raised.value.response
        assert (error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"]) == (
            "DatabaseResumingException",
            400,
        )
        assert error["Error"]["Message"] == (
            f"The Aurora DB instance {unique}-1 is resuming after being auto-paused. "
            "Please wait a few seconds and try again."
        )
        # A cluster whose minimum capacity is not 0 never pauses.
        data.execute_statement(**cluster, sql="SELECT 1")
        while True:
            try:
                data.execute_statement(**paused, sql="SELECT 1")
                break
            except ClientError as e:
                assert e.response["Error"]["Code"] == "DatabaseResumingException"
                assert time.monotonic() - started < 5, "still resuming after 5 s"
                time.sleep(0.2)
        assert 1.8 <= time.monotonic() - started < 5
        # Used again within the idle time: no pause.
        data.execute_statement(**paused, sql="SELECT 1")
    finally:
        _aurora(endpoint, {"resume_seconds": 0})
        rds.delete_db_instance(DBInstanceIdentifier=f"{unique}-1", SkipFinalSnapshot=True)
        rds.delete_db_cluster(DBClusterIdentifier=unique, SkipFinalSnapshot=True)


# -- who may log in: Aurora's rules, not a local superuser for every secret ----------


def _secret(aws: Callable[[str], Any], username: str, password: str) -> str:
    return aws("secretsmanager").create_secret(
        Name=f"smoke-login-{uuid.uuid4().hex[:8]}",
        SecretString=json.dumps({"username": username, "password": password}),
    )["ARN"]


def _refusal(data: Any, target: dict[str, str]) -> tuple[str, str]:
    with pytest.raises(ClientError) as raised:
        data.execute_statement(**target, sql="SELECT 1")
    return error_code(raised.value), raised.value.response["Error"]["Message"]


def test_only_the_master_user_is_made_and_any_other_logs_in_with_its_own_password(
    aws: Callable[[str], Any], data: Any, cluster: dict[str, str], table: str
) -> None:
    job = f"smoke_job_{uuid.uuid4().hex[:8]}"
    data.execute_statement(**cluster, sql=f"CREATE ROLE {job} LOGIN PASSWORD 'job-password-1'")
    try:
        # A user the database does not hold: refused, not created.
        ghost = f"smoke_ghost_{uuid.uuid4().hex[:8]}"
        code, message = _refusal(data, {**cluster, "secretArn": _secret(aws, ghost, "any-password-1")})
        assert (code, message) == ("BadRequestException", f'FATAL: password authentication failed for user "{ghost}"')
        assert data.execute_statement(
            **cluster,
            sql="SELECT count(*) FROM pg_roles WHERE rolname = :name",
            parameters=[{"name": "name", "value": {"stringValue": ghost}}],
        )["records"] == [[{"longValue": 0}]]
        # A user that exists, with another password: refused.
        code, message = _refusal(data, {**cluster, "secretArn": _secret(aws, job, "wrong-password-1")})
        assert (code, message) == ("BadRequestException", f'FATAL: password authentication failed for user "{job}"')
        # The master user with a password that is not the cluster's: refused too.
        code, _ = _refusal(data, {**cluster, "secretArn": _secret(aws, "smoke_master", "not-the-master-1")})
        assert code == "BadRequestException"
        # With its password: in, as itself, with no more than it was granted.
        own = {**cluster, "secretArn": _secret(aws, job, "job-password-1")}
        who = data.execute_statement(
            **own, sql="SELECT current_user::text, rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user"
        )["records"]
        assert who == [[{"stringValue": job}, {"booleanValue": False}, {"booleanValue": False}]]
        with pytest.raises(ClientError) as raised:
            data.execute_statement(**own, sql=f"SELECT * FROM {table}")
        assert error_code(raised.value) == "DatabaseErrorException"
        assert raised.value.response["Error"]["Message"].startswith(f"ERROR: permission denied for table {table}")
    finally:
        data.execute_statement(**cluster, sql=f"DROP ROLE IF EXISTS {job}")


def test_a_managed_master_secret_names_the_clusters_master_user_with_a_password_of_its_own(
    aws: Callable[[str], Any], data: Any
) -> None:
    unique = f"smoke-managed-{uuid.uuid4().hex[:8]}"
    rds = aws("rds")
    created = rds.create_db_cluster(
        DBClusterIdentifier=unique,
        Engine="aurora-postgresql",
        EngineVersion="15.4",
        MasterUsername="smoke_managed",
        ManageMasterUserPassword=True,
        DatabaseName=f"{unique.replace('-', '_')}_db",
        EnableHttpEndpoint=True,
        ServerlessV2ScalingConfiguration={"MinCapacity": 0.5, "MaxCapacity": 1},
    )["DBCluster"]
    try:
        secret_arn = created["MasterUserSecret"]["SecretArn"]
        value = json.loads(aws("secretsmanager").get_secret_value(SecretId=secret_arn)["SecretString"])
        assert value["username"] == "smoke_managed"
        assert len(value["password"]) >= 30 and value["password"] != "P@55w0rd!"
        target = {"resourceArn": created["DBClusterArn"], "secretArn": secret_arn, "database": created["DatabaseName"]}
        assert data.execute_statement(**target, sql="SELECT current_user::text")["records"] == [
            [{"stringValue": "smoke_managed"}]
        ]
    finally:
        rds.delete_db_cluster(DBClusterIdentifier=unique, SkipFinalSnapshot=True)
