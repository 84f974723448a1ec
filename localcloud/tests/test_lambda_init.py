"""The Lambda init's callbacks to LocalStack's executor endpoint (live_ci_localcloud.lambda_init):
each reaches the endpoint's path on loopback, never through a proxy from the environment, and
costs no TLS set-up (loading the system's CA certificates per callback burnt tens of
milliseconds of CPU per invocation, two callbacks each)."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

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
