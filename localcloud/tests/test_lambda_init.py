"""The Lambda init's callbacks to LocalStack's executor endpoint (live_ci_localcloud.lambda_init):
each reaches the endpoint's path on loopback, never through a proxy from the environment, and
costs no TLS set-up (loading the system's CA certificates per callback burnt tens of
milliseconds of CPU per invocation, two callbacks each)."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from live_ci_localcloud import lambda_init
from live_ci_localcloud.lambda_init import Init


@pytest.fixture
def executor_endpoint() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    received: list[tuple[str, str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append((self.path, self.headers.get("Content-Type", ""), body))
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/_localstack_lambda/env-1", received
    finally:
        server.shutdown()
        server.server_close()


def test_a_callback_reaches_the_executor_endpoint_without_tls_set_up_or_a_proxy(
    executor_endpoint: tuple[str, list[tuple[str, str, bytes]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, received = executor_endpoint

    def no_certificates(*_: object, **__: object) -> None:
        raise AssertionError("a callback loaded the CA certificates")

    monkeypatch.setattr(ssl.SSLContext, "load_default_certs", no_certificates)
    monkeypatch.setattr(ssl, "create_default_context", no_certificates)
    # A proxy that answers nothing: a callback sent there would fail.
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    init = Init(endpoint=endpoint + "/", env_id="env-1", task_root="/nonexistent", timeout=3)

    init.status("ready")
    init.post("/invocations/req-1/response", b'{"ok":true}')

    assert received == [
        ("/_localstack_lambda/env-1/status/env-1/ready", "application/json", b"{}"),
        ("/_localstack_lambda/env-1/invocations/req-1/response", "application/json", b'{"ok":true}'),
    ]


def test_an_endpoint_that_is_not_http_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="'ftp://127.0.0.1/x'"):
        Init(endpoint="ftp://127.0.0.1/x", env_id="env-1", task_root="/nonexistent", timeout=3)


@pytest.fixture
def runtime_api() -> Iterator[tuple[Init, tuple[str, int], list[tuple[str, bytes]]]]:
    """An init's Runtime API server on a loopback port, its callbacks recorded instead of sent."""
    init = Init(endpoint="http://127.0.0.1:9/_localstack_lambda/env-1", env_id="env-1", task_root="/x", timeout=30)
    callbacks: list[tuple[str, bytes]] = []
    init.post = lambda path, body, content_type="application/json": callbacks.append((path, body))  # type: ignore[method-assign]
    server = lambda_init.RuntimeApiServer(("127.0.0.1", 0), lambda_init.make_handler(init))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield init, server.server_address[:2], callbacks
    finally:
        init.stopping.set()
        server.shutdown()
        server.server_close()


def exchange(connection: socket.socket, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Sends one request on a kept connection and reads one answer (Content-Length framed)."""
    connection.sendall(request)
    reader = connection.makefile("rb")
    status = int(reader.readline().split()[1])
    headers: dict[str, str] = {}
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, reader.read(int(headers.get("content-length", "0")))


def test_the_runtime_api_serves_an_invocation_and_takes_its_result_on_one_kept_connection(
    runtime_api: tuple[Init, tuple[str, int], list[tuple[str, bytes]]],
) -> None:
    init, address, callbacks = runtime_api
    init.ready_sent = True  # no "ready" callback in this test
    init.enqueue({"invoke-id": "req-1", "invoked-function-arn": "arn:fn", "payload": '{"n":1}', "trace-id": "t-1"})
    with socket.create_connection(address, timeout=10) as connection:
        status, headers, body = exchange(
            connection, b"GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        assert (status, body) == (200, b'{"n":1}')
        assert headers["lambda-runtime-aws-request-id"] == "req-1"
        assert headers["lambda-runtime-invoked-function-arn"] == "arn:fn"
        assert headers["lambda-runtime-trace-id"] == "t-1"
        # The result in chunks, as a streaming client sends it, on the same connection.
        status, _, body = exchange(
            connection,
            b"POST /2018-06-01/runtime/invocation/req-1/response HTTP/1.1\r\nHost: x\r\n"
            b'Transfer-Encoding: chunked\r\n\r\n4\r\n{"ok\r\n6\r\n":true\r\n1\r\n}\r\n0\r\n\r\n',
        )
        assert (status, body) == (202, b'{"status":"OK"}')
        # A second result for the same request is refused.
        status, _, _ = exchange(
            connection,
            b"POST /2018-06-01/runtime/invocation/req-1/response HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
        )
        assert status == 400
    assert [path for path, _ in callbacks] == ["/invocations/req-1/logs", "/invocations/req-1/response"]
    assert callbacks[1][1] == b'{"ok":true}'


def test_the_runtime_api_answers_unknown_paths_404_and_malformed_requests_400(
    runtime_api: tuple[Init, tuple[str, int], list[tuple[str, bytes]]],
) -> None:
    _, address, _ = runtime_api
    with socket.create_connection(address, timeout=10) as connection:
        status, _, _ = exchange(connection, b"GET /2020-01-01/extension/register HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == 404
        status, headers, _ = exchange(connection, b"NONSENSE\r\n\r\n")
        assert status == 400 and headers.get("connection") == "close"


def test_bad_command_lines_name_the_option() -> None:
    with pytest.raises(SystemExit, match="missing --timeout"):
        lambda_init.parse_options(
            ["--listen-fd", "3", "--parent-pid", "1", "--endpoint", "http://h:1/x"]
            + ["--env-id", "e", "--task-root", "/t"]
        )
    with pytest.raises(SystemExit, match="unknown argument '--nope'"):
        lambda_init.parse_options(["--nope", "1"])
    with pytest.raises(SystemExit, match="--timeout needs a value"):
        lambda_init.parse_options(["--timeout"])


def test_the_init_starts_without_the_heavy_imports() -> None:
    # Every execution environment's cold start pays the init's imports: http.server and
    # http.client (the email package), argparse and dataclasses were about 60 ms of it.
    import subprocess
    import sys

    probe = (
        "import sys, live_ci_localcloud.lambda_init;"
        "print(sorted(m for m in ('email', 'http.client', 'http.server', 'argparse', 'dataclasses', 'urllib.request')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
