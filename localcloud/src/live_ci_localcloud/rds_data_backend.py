"""The RDS Data API's semantics over a real PostgreSQL (psycopg), free of LocalStack
so the limits can be tested with a controlled clock (`rds_data.py` serves it).

What AWS documents, and this enforces:
- `:name` parameters (stringValue, longValue, doubleValue, booleanValue, blobValue,
  isNull) with optional `typeHint` (JSON, UUID, TIMESTAMP, DATE, TIME, DECIMAL); no
  array parameters.
- `formatRecordsAs = JSON`: `formattedRecords` is a JSON array with one object per
  row, column name to value (numbers, booleans, null; json and jsonb as text;
  numeric and dates as strings); otherwise `records` of typed fields.
- The response limit: "If the binary response data from the database is more than
  1 MB, the call is terminated" with `BadRequestException: Database returned more
  than the allowed response size limit`; `formattedRecords` at most 10 MB. The
  size counted is the rows' values as PostgreSQL's text output (UTF-8 bytes).
  Like AWS, the error ends a transaction the call belonged to.
- Transactions: `BeginTransaction` opens one on a dedicated connection; each call
  must come within 3 minutes of the previous one, and none lives past 24 hours:
  an expired transaction is rolled back (its locks released) and its id answers
  `TransactionNotFoundException` ("Transaction <id> is not found"), as does an id
  that was committed, rolled back or aborted by an error in one of its statements.
  A call on a transaction that is still running another answers
  `DatabaseErrorException: Transaction is still running a query`.
- A statement stops after 45 s (`StatementTimeoutException`) unless
  `continueAfterTimeout` (then it runs to its end; the call still waits for it).
- SQL errors are `DatabaseErrorException` with PostgreSQL's message and SQLState.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import psycopg
from psycopg.types.string import TextLoader

MAX_RESPONSE_BYTES = 1024 * 1024
MAX_FORMATTED_BYTES = 10 * 1000 * 1000
TX_IDLE_SECONDS = 3 * 60
TX_MAX_SECONDS = 24 * 60 * 60
CALL_TIMEOUT_SECONDS = 45
SIZE_LIMIT_MESSAGE = "Database returned more than the allowed response size limit"

_TYPE_HINTS = {
    "JSON": "jsonb",
    "UUID": "uuid",
    "TIMESTAMP": "timestamp",
    "DATE": "date",
    "TIME": "time",
    "DECIMAL": "numeric",
}


class DataApiError(Exception):
    """An error answered the way the Data API does: its code, message and status."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Target:
    """Where a request's statements run: a libpq connection string."""

    conninfo: str


def to_pyformat(sql: str, hints: dict[str, str]) -> tuple[str, list[str]]:
    """Rewrites `:name` parameters to psycopg's `%(name)s` (with a cast for a type
    hint) and doubles `%`. Literals, quoted identifiers, dollar-quoted bodies,
    comments and `::` casts are copied unchanged. Returns the names used."""
    out: list[str] = []
    names: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        end = _skip_quoted(sql, i)
        if end is not None:
            out.append(sql[i:end].replace("%", "%%"))
            i = end
            continue
        if c == ":":
            if sql.startswith("::", i):
                out.append("::")
                i += 2
                continue
            m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", sql[i + 1 :])
            if m:
                name = m.group(0)
                names.append(name)
                cast = _TYPE_HINTS.get(hints.get(name, ""))
                out.append(f"%({name})s" + (f"::{cast}" if cast else ""))
                i += 1 + len(name)
                continue
        out.append("%%" if c == "%" else c)
        i += 1
    return "".join(out), names


def _skip_quoted(sql: str, i: int) -> int | None:
    c = sql[i]
    if c in "'\"":
        j = i + 1
        while j < len(sql):
            if sql[j] == c:
                if j + 1 < len(sql) and sql[j + 1] == c:
                    j += 2
                    continue
                return j + 1
            j += 1
        return len(sql)
    if sql.startswith("--", i):
        j = sql.find("\n", i)
        return len(sql) if j < 0 else j
    if sql.startswith("/*", i):
        j = sql.find("*/", i + 2)
        return len(sql) if j < 0 else j + 2
    if c == "$":
        m = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$", sql[i:])
        if m:
            tag = m.group(0)
            j = sql.find(tag, i + len(tag))
            return len(sql) if j < 0 else j + len(tag)
    return None


def parameter_values(parameters: list[dict[str, Any]] | None) -> tuple[dict[str, Any], dict[str, str]]:
    """The Data API's SqlParameter list as psycopg values, and the type hints."""
    values: dict[str, Any] = {}
    hints: dict[str, str] = {}
    for p in parameters or []:
        name = p.get("name")
        if not name:
            raise DataApiError("BadRequestException", "parameter without a name")
        value = p.get("value") or {}
        if "arrayValue" in value:
            raise DataApiError("BadRequestException", f"array parameters are not supported (parameter {name!r})")
        if value.get("isNull"):
            v: Any = None
        elif "stringValue" in value:
            v = value["stringValue"]
        elif "longValue" in value:
            v = int(value["longValue"])
        elif "doubleValue" in value:
            v = float(value["doubleValue"])
        elif "booleanValue" in value:
            v = bool(value["booleanValue"])
        elif "blobValue" in value:
            blob = value["blobValue"]
            v = blob if isinstance(blob, bytes) else base64.b64decode(blob)
        else:
            raise DataApiError("BadRequestException", f"parameter {name!r} has no value")
        values[name] = v
        if p.get("typeHint"):
            hints[name] = p["typeHint"]
    return values, hints


def _text_of(value: Any) -> str:
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return str(value)


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    return str(value)


def _field(value: Any) -> dict[str, Any]:
    if value is None:
        return {"isNull": True}
    if isinstance(value, bool):
        return {"booleanValue": value}
    if isinstance(value, int):
        return {"longValue": value}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"blobValue": bytes(value)}
    if isinstance(value, Decimal):
        return {"stringValue": str(value)}
    return {"stringValue": str(value)}


def _updated(status: str | None) -> int:
    """Rows changed, from the command tag (`UPDATE 3`, `INSERT 0 3`); 0 for SELECT."""
    if not status:
        return 0
    parts = status.split()
    if parts[0] in ("INSERT", "UPDATE", "DELETE", "MERGE", "COPY") and parts[-1].isdigit():
        return int(parts[-1])
    return 0


def _connect(conninfo: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=10)
    # json and jsonb come back as their text, as the Data API returns them.
    for name in ("json", "jsonb"):
        conn.adapters.register_loader(name, TextLoader)
    conn.execute(f"SET statement_timeout = {CALL_TIMEOUT_SECONDS * 1000}")
    return conn


def _unavailable(e: psycopg.OperationalError) -> DataApiError:
    """A refused login is the caller's (Aurora's Data API: BadRequestException
    `FATAL: password authentication failed for user "<name>"`, for an unknown
    user too); anything else, the database's."""
    text = str(e)
    if "password authentication failed" in text:
        start = text.index("password authentication failed")
        line = text[start:].splitlines()[0]
        return DataApiError("BadRequestException", f"FATAL: {line}")
    return DataApiError("DatabaseUnavailableException", f"cannot reach the database: {e}", 504)


def _database_error(e: psycopg.Error) -> DataApiError:
    if isinstance(e, psycopg.errors.QueryCanceled):
        return DataApiError("StatementTimeoutException", "Request timed out")
    diag = getattr(e, "diag", None)
    primary = (diag.message_primary if diag else None) or str(e).strip()
    detail = f"\n  Detail: {diag.message_detail}" if diag and diag.message_detail else ""
    return DataApiError("DatabaseErrorException", f"ERROR: {primary}{detail}; SQLState: {e.sqlstate}")


@dataclass
class _Transaction:
    conn: psycopg.Connection[Any]
    target: Target
    started: float
    last_used: float
    busy: threading.Lock = field(default_factory=threading.Lock)


class DataApiBackend:
    """Transactions and statements; `resolve` turns (resourceArn, secretArn,
    database) into a Target or raises a DataApiError."""

    def __init__(
        self,
        resolve: Callable[[str, str, str | None], Target],
        clock: Callable[[], float] = time.monotonic,
        idle_seconds: float = TX_IDLE_SECONDS,
        max_seconds: float = TX_MAX_SECONDS,
    ) -> None:
        self.resolve = resolve
        self.clock = clock
        self.idle_seconds = idle_seconds
        self.max_seconds = max_seconds
        self.lock = threading.Lock()
        self.transactions: dict[str, _Transaction] = {}
        self.pool: dict[str, list[psycopg.Connection[Any]]] = {}

    # -- connections ---------------------------------------------------------

    def _borrow(self, target: Target) -> psycopg.Connection[Any]:
        with self.lock:
            idle = self.pool.get(target.conninfo) or []
            while idle:
                conn = idle.pop()
                if not conn.closed:
                    return conn
        try:
            return _connect(target.conninfo)
        except psycopg.OperationalError as e:
            raise _unavailable(e) from e

    def _give_back(self, target: Target, conn: psycopg.Connection[Any]) -> None:
        if conn.closed or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.close()
            return
        with self.lock:
            self.pool.setdefault(target.conninfo, []).append(conn)

    # -- transactions --------------------------------------------------------

    def reap(self) -> list[str]:
        """Rolls back every expired transaction; returns their ids."""
        now = self.clock()
        with self.lock:
            expired = [
                (tid, tx)
                for tid, tx in self.transactions.items()
                if now - tx.last_used > self.idle_seconds or now - tx.started > self.max_seconds
            ]
            for tid, _ in expired:
                del self.transactions[tid]
        for _, tx in expired:
            tx.conn.close()  # closing aborts it server-side, releasing its locks
        return [tid for tid, _ in expired]

    def _take(self, transaction_id: str) -> _Transaction:
        self.reap()
        with self.lock:
            tx = self.transactions.get(transaction_id)
        if tx is None:
            raise DataApiError("TransactionNotFoundException", f"Transaction {transaction_id} is not found", 404)
        if not tx.busy.acquire(blocking=False):
            raise DataApiError("DatabaseErrorException", "Transaction is still running a query")
        tx.last_used = self.clock()
        return tx

    def _end(self, transaction_id: str, tx: _Transaction) -> None:
        with self.lock:
            self.transactions.pop(transaction_id, None)
        tx.conn.close()

    def begin(self, resource_arn: str, secret_arn: str, database: str | None) -> dict[str, Any]:
        target = self.resolve(resource_arn, secret_arn, database)
        try:
            conn = _connect(target.conninfo)
            conn.execute("BEGIN")
        except psycopg.OperationalError as e:
            raise _unavailable(e) from e
        tid = base64.b64encode(secrets.token_bytes(96)).decode()
        now = self.clock()
        with self.lock:
            self.transactions[tid] = _Transaction(conn=conn, target=target, started=now, last_used=now)
        return {"transactionId": tid}

    def finish(self, transaction_id: str, commit: bool) -> dict[str, Any]:
        tx = self._take(transaction_id)
        try:
            tx.conn.execute("COMMIT" if commit else "ROLLBACK")
        except psycopg.Error as e:
            raise _database_error(e) from e
        finally:
            self._end(transaction_id, tx)
            tx.busy.release()
        return {"transactionStatus": "Transaction Committed" if commit else "Rollback Complete"}

    # -- statements ----------------------------------------------------------

    def execute(self, request: dict[str, Any]) -> dict[str, Any]:
        values, hints = parameter_values(request.get("parameters"))
        sql, names = to_pyformat(request.get("sql") or "", hints)
        missing = sorted(set(names) - values.keys())
        if missing:
            raise DataApiError("BadRequestException", f"no value given for parameter(s) {', '.join(missing)}")
        as_json = request.get("formatRecordsAs") == "JSON"
        with_metadata = bool(request.get("includeResultMetadata"))
        rows, columns, status = self._run(request, lambda cur: [cur.execute(sql, values)])
        response: dict[str, Any] = {"numberOfRecordsUpdated": _updated(status[0])}
        if columns is None:
            if not as_json:
                response["generatedFields"] = []
            return response
        if as_json:
            records = [{c[0]: _json_value(v) for c, v in zip(columns, row, strict=True)} for row in rows]
            text = json.dumps(records, ensure_ascii=False, separators=(",", ":"))
            if len(text.encode()) > MAX_FORMATTED_BYTES:
                raise DataApiError("BadRequestException", SIZE_LIMIT_MESSAGE)
            response["formattedRecords"] = text
        else:
            response["records"] = [[_field(v) for v in row] for row in rows]
            if with_metadata:
                response["columnMetadata"] = [
                    {"name": c[0], "label": c[0], "typeName": c[1], "nullable": 2} for c in columns
                ]
        return response

    def batch(self, request: dict[str, Any]) -> dict[str, Any]:
        sets = request.get("parameterSets") or [[]]
        prepared = []
        for parameters in sets:
            values, hints = parameter_values(parameters)
            sql, _ = to_pyformat(request.get("sql") or "", hints)
            prepared.append((sql, values))

        def run(cur: psycopg.Cursor[Any]) -> list[None]:
            # One call, one unit: without a transaction id the batch commits as a whole.
            if not request.get("transactionId"):
                cur.execute("BEGIN")
            for sql, values in prepared:
                cur.execute(sql, values)
            if not request.get("transactionId"):
                cur.execute("COMMIT")
            return []

        self._run(request, run, fetch=False)
        return {"updateResults": [{"generatedFields": []} for _ in prepared]}

    def _run(
        self,
        request: dict[str, Any],
        body: Callable[[psycopg.Cursor[Any]], list[Any]],
        fetch: bool = True,
    ) -> tuple[list[tuple[Any, ...]], list[tuple[str, str]] | None, list[str | None]]:
        transaction_id = request.get("transactionId")
        if transaction_id:
            tx = self._take(transaction_id)
            conn, target = tx.conn, tx.target
        else:
            tx = None
            target = self.resolve(request["resourceArn"], request["secretArn"], request.get("database"))
            conn = self._borrow(target)
        failed = True
        try:
            if request.get("continueAfterTimeout"):
                conn.execute("SET statement_timeout = 0")
            with conn.cursor() as cur:
                body(cur)
                status = [cur.statusmessage]
                columns = None
                rows: list[tuple[Any, ...]] = []
                if fetch and cur.description is not None:
                    columns = [(c.name, _type_name(conn, c.type_code)) for c in cur.description]
                    size = 0
                    # Counted while fetching: the call ends as soon as the limit is passed.
                    for row in cur:
                        size += sum(len(_text_of(v).encode()) for v in row if v is not None)
                        if size > MAX_RESPONSE_BYTES:
                            raise DataApiError("BadRequestException", SIZE_LIMIT_MESSAGE)
                        rows.append(row)
            if request.get("continueAfterTimeout"):
                conn.execute(f"SET statement_timeout = {CALL_TIMEOUT_SECONDS * 1000}")
            failed = False
            return rows, columns, status
        except psycopg.OperationalError as e:
            if conn.closed:
                raise DataApiError("DatabaseUnavailableException", f"lost the database connection: {e}", 504) from e
            raise _database_error(e) from e
        except psycopg.Error as e:
            raise _database_error(e) from e
        finally:
            if tx is not None and transaction_id:
                if failed:
                    # AWS ends a transaction whose call failed: later calls find no transaction.
                    self._end(transaction_id, tx)
                tx.busy.release()
            else:
                if failed and not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.execute("ROLLBACK")
                self._give_back(target, conn)

    def close(self) -> None:
        with self.lock:
            conns = [c for idle in self.pool.values() for c in idle]
            conns += [tx.conn for tx in self.transactions.values()]
            self.pool.clear()
            self.transactions.clear()
        for conn in conns:
            conn.close()


_TYPE_NAMES: dict[int, str] = {}


def _type_name(conn: psycopg.Connection[Any], oid: int) -> str:
    if oid not in _TYPE_NAMES:
        info = conn.adapters.types.get(oid)
        _TYPE_NAMES[oid] = info.name if info else str(oid)
    return _TYPE_NAMES[oid]
