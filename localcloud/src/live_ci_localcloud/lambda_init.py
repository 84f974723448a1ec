"""A local Lambda "init": the process that stands in for LocalStack's containerised
runtime init (standard library only, so it starts in tens of milliseconds).

It serves, on one loopback port (a listening socket inherited from the executor):
- LocalStack's side: `POST /invoke` with {"invoke-id", "invoked-function-arn",
  "payload", "trace-id"};
- the function's side: the Lambda Runtime API (`/2018-06-01/runtime/...`).
It starts the function's `bootstrap` with `AWS_LAMBDA_RUNTIME_API` pointing at
itself and reports back to LocalStack's executor endpoint:
`POST <endpoint>/status/<id>/ready|error` once, then per invocation
`.../invocations/<request>/logs` (before the result, which LocalStack expects) and
`.../invocations/<request>/response|error`.

Lifecycle, as in AWS: the environment is ready when the runtime first asks for
work; a runtime that crashes or times out during an invocation fails that
invocation and is started again (a fresh "init"); the whole process tree goes when
LocalStack stops the environment (SIGTERM) or dies (parent-pid watch).
"""

from __future__ import annotations

import argparse
import codecs
import fcntl
import http.client
import json
import math
import os
import queue
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from live_ci_localcloud.supervise import exit_status, kill_group, spawn_group, watch_parent

RUNTIME_PREFIX = "/2018-06-01/runtime"
# A runtime that keeps crashing while idle is restarted at most this often.
RESTART_BACKOFF_SECONDS = 1.0


def log(message: str) -> None:
    # The init's own stderr is the environment's log file (the executor's get_logs).
    print(f"[live-ci init] {message}", file=sys.stderr, flush=True)


@dataclass
class Invocation:
    request_id: str
    function_arn: str
    payload: bytes
    trace_id: str
    received: float = field(default_factory=time.monotonic)
    deadline_ms: int = 0
    done: bool = False


class Init:
    def __init__(self, *, endpoint: str, env_id: str, task_root: str, timeout: float) -> None:
        self.endpoint = endpoint.rstrip("/")
        callback = urllib.parse.urlsplit(self.endpoint)
        if callback.scheme != "http" or not callback.hostname:
            raise ValueError(f"the executor endpoint {endpoint!r} is not an http:// URL")
        self.callback_host = callback.hostname
        self.callback_port = callback.port or 80
        self.callback_path = callback.path
        self.env_id = env_id
        self.task_root = task_root
        self.timeout = timeout
        self.version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        self.pending: queue.Queue[Invocation] = queue.Queue()
        self.lock = threading.Lock()
        self.current: Invocation | None = None
        self.ready_sent = False
        self.init_failed = False
        self.output: list[str] = []
        self.output_fd: int | None = None
        self.runtime: subprocess.Popen[bytes] | None = None
        self.restart = threading.Event()
        self.stopping = threading.Event()

    # --- callbacks to LocalStack -------------------------------------------------

    def post(self, path: str, body: bytes, content_type: str = "application/json") -> None:
        # http.client straight to LocalStack's loopback port: urllib's build_opener
        # makes an HTTPS handler whose SSL context loads every system CA certificate
        # (tens of ms of CPU per callback, two callbacks per invocation), and it would
        # go through a proxy from the environment.
        try:
            connection = http.client.HTTPConnection(self.callback_host, self.callback_port, timeout=30)
            try:
                connection.request(
                    "POST", f"{self.callback_path}{path}", body=body, headers={"Content-Type": content_type}
                )
                connection.getresponse().read()
            finally:
                connection.close()
        except Exception as e:  # noqa: BLE001 - report and carry on, LocalStack times the env out
            log(f"callback {path} failed: {e}")

    def status(self, what: str, body: bytes = b"{}") -> None:
        self.post(f"/status/{self.env_id}/{what}", body)

    # --- runtime output ----------------------------------------------------------

    def pump_output(self, fd: int) -> None:
        # Unbuffered reads: what the pump holds is always in self.output, so an empty
        # pipe means everything the runtime wrote so far is accounted for.
        self.output_fd = fd
        # Incremental: a UTF-8 character split across two reads stays whole.
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            text = decoder.decode(data, final=not data)
            if not data and not text:
                return
            with self.lock:
                self.output.append(text)
            sys.stderr.write(text)
            sys.stderr.flush()

    def unread_output(self) -> int:
        """Bytes the runtime wrote that the pump has not taken yet."""
        fd = self.output_fd
        if fd is None:
            return 0
        try:
            return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)
        except OSError:
            return 0

    def take_output(self) -> str:
        # The runtime prints, then posts its result: those bytes are in the pipe by now,
        # but the pump thread may not have taken them yet. Wait (bounded) until the pipe
        # is drained, so the lines land in this invocation's logs, not the next one's.
        deadline = time.monotonic() + 0.2
        while self.unread_output() and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(0.001)  # the pump may be between its read and its append
        with self.lock:
            text, self.output = "".join(self.output), []
        if text and not text.endswith("\n"):
            text += "\n"
        return text

    # --- invocations -------------------------------------------------------------

    def enqueue(self, body: dict[str, Any]) -> None:
        invocation = Invocation(
            request_id=body["invoke-id"],
            function_arn=body.get("invoked-function-arn", ""),
            payload=(body.get("payload") or "").encode(),
            trace_id=body.get("trace-id") or "",
        )
        invocation.deadline_ms = int((time.time() + self.timeout) * 1000)
        timer = threading.Timer(self.timeout, self.timed_out, args=(invocation,))
        timer.daemon = True
        timer.start()
        self.pending.put(invocation)

    def next_invocation(self) -> Invocation | None:
        if not self.ready_sent:
            # First request for work: the runtime's init phase is over.
            self.ready_sent = True
            self.status("ready")
        while not self.stopping.is_set():
            try:
                invocation = self.pending.get(timeout=0.5)
            except queue.Empty:
                continue
            with self.lock:
                if invocation.done:  # timed out while queued
                    continue
                self.current = invocation
            return invocation
        return None

    def finish(self, request_id: str, body: bytes, *, error: bool) -> bool:
        with self.lock:
            invocation = self.current
            if invocation is None or invocation.request_id != request_id or invocation.done:
                return False
            invocation.done = True
            self.current = None
        elapsed_ms = (time.monotonic() - invocation.received) * 1000
        logs = (
            f"START RequestId: {request_id} Version: {self.version}\n"
            f"{self.take_output()}"
            f"END RequestId: {request_id}\n"
            f"REPORT RequestId: {request_id}\tDuration: {elapsed_ms:.2f} ms\t"
            f"Billed Duration: {math.ceil(elapsed_ms)} ms\tMemory Size: {self.memory} MB\t"
            f"Max Memory Used: {self.memory} MB\t\n"
        )
        # LocalStack attaches the logs it has when the result arrives: logs first.
        self.post(f"/invocations/{request_id}/logs", json.dumps({"logs": logs}).encode())
        self.post(f"/invocations/{request_id}/{'error' if error else 'response'}", body)
        return True

    def fail_current(self, error_type: str, message: str) -> bool:
        with self.lock:
            invocation = self.current
        if invocation is None:
            return False
        return self.finish(invocation.request_id, self._error_body(error_type, message), error=True)

    def timed_out(self, invocation: Invocation) -> None:
        with self.lock:
            if invocation.done:
                return
            running = self.current is invocation
            if not running:
                # Still queued (the runtime never asked for it): fail it, no restart.
                invocation.done = True
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        message = f"{stamp} {invocation.request_id} Task timed out after {self.timeout:.2f} seconds"
        log(message)
        body = self._error_body("Sandbox.Timedout", message)
        if not running:
            self.post(f"/invocations/{invocation.request_id}/error", body)
            return
        # As in AWS, the environment is reset: a fresh runtime for the next invocation.
        self.restart.set()
        self.finish(invocation.request_id, body, error=True)
        if self.runtime is not None:
            kill_group(self.runtime, grace=0.5)

    # --- the runtime process -----------------------------------------------------

    def bootstrap_path(self) -> str | None:
        for candidate in (os.path.join(self.task_root, "bootstrap"), "/opt/bootstrap"):
            if os.path.isfile(candidate):
                return candidate
        return None

    def run_runtime(self, api: str) -> None:
        """Main thread: start the runtime, restart it after a crash, until stopped."""
        bootstrap = self.bootstrap_path()
        if bootstrap is None:
            self.status("error", self._error_body("Runtime.InvalidEntrypoint", "no bootstrap in the code"))
            return
        env = dict(os.environ)
        env["AWS_LAMBDA_RUNTIME_API"] = api
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                self.runtime = spawn_group(
                    [bootstrap], env=env, cwd=self.task_root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
                )
            except OSError as e:
                self.status("error", self._error_body("Runtime.InvalidEntrypoint", str(e)))
                return
            assert self.runtime.stdout is not None
            pump = threading.Thread(target=self.pump_output, args=(self.runtime.stdout.fileno(),), daemon=True)
            pump.start()
            code = exit_status(self.runtime.wait())
            pump.join(timeout=1)
            if self.stopping.is_set():
                return
            if self.restart.is_set():
                self.restart.clear()
                continue
            reason = f"Runtime exited with error: exit status {code}"
            log(reason)
            if not self.ready_sent:
                # Failed during init: LocalStack fails the environment (and the invoke).
                # Once only: the runtime may have reported it itself (/init/error).
                if not self.init_failed:
                    self.init_failed = True
                    self.status("error", self._error_body("Runtime.ExitError", reason))
                return
            self.fail_current("Runtime.ExitError", f"RequestId: {self._current_id()} Error: {reason}")
            if time.monotonic() - started < RESTART_BACKOFF_SECONDS:
                time.sleep(RESTART_BACKOFF_SECONDS)

    def _current_id(self) -> str:
        with self.lock:
            return self.current.request_id if self.current else ""

    @staticmethod
    def _error_body(error_type: str, message: str) -> bytes:
        return json.dumps({"errorType": error_type, "errorMessage": message}).encode()

    def stop(self) -> None:
        if self.stopping.is_set():
            return
        self.stopping.set()
        if self.runtime is not None:
            kill_group(self.runtime, grace=1.0)


def make_handler(init: Init) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass  # one line per request would drown the function's own output

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            if self.path == f"{RUNTIME_PREFIX}/invocation/next":
                invocation = init.next_invocation()
                if invocation is None:
                    self._reply(HTTPStatus.GONE)
                    return
                headers = {
                    "Content-Type": "application/json",
                    "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
                    "Lambda-Runtime-Deadline-Ms": str(invocation.deadline_ms),
                    "Lambda-Runtime-Invoked-Function-Arn": invocation.function_arn,
                    "Lambda-Runtime-Trace-Id": invocation.trace_id,
                }
                self._reply(HTTPStatus.OK, invocation.payload, headers)
                return
            self._reply(HTTPStatus.NOT_FOUND)

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            body = self._body()
            parts = self.path.split("/")
            if self.path == "/invoke":
                init.enqueue(json.loads(body))
                self._reply(HTTPStatus.OK)
            elif self.path.startswith(f"{RUNTIME_PREFIX}/invocation/") and len(parts) == 6:
                request_id, what = parts[4], parts[5]
                if what not in ("response", "error"):
                    self._reply(HTTPStatus.NOT_FOUND)
                    return
                if what == "error" and not body:
                    error_type = self.headers.get("Lambda-Runtime-Function-Error-Type", "Unhandled")
                    body = Init._error_body(error_type, error_type)
                if init.finish(request_id, body, error=what == "error"):
                    self._reply(HTTPStatus.ACCEPTED, b'{"status":"OK"}', {"Content-Type": "application/json"})
                else:
                    self._reply(
                        HTTPStatus.BAD_REQUEST,
                        b'{"errorType":"InvalidRequestID","errorMessage":"unknown or finished request"}',
                        {"Content-Type": "application/json"},
                    )
            elif self.path == f"{RUNTIME_PREFIX}/init/error":
                init.init_failed = True
                init.status("error", body or b"{}")
                self._reply(HTTPStatus.ACCEPTED, b'{"status":"OK"}', {"Content-Type": "application/json"})
            else:
                # Includes the Extensions and Telemetry APIs, which are not emulated.
                self._reply(HTTPStatus.NOT_FOUND)

    return Handler


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listen-fd", type=int, required=True, help="inherited listening socket")
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--endpoint", required=True, help="LocalStack's executor endpoint for this env")
    parser.add_argument("--env-id", required=True)
    parser.add_argument("--task-root", required=True)
    parser.add_argument("--timeout", type=float, required=True, help="the function's timeout (s)")
    opts = parser.parse_args(args)

    init = Init(endpoint=opts.endpoint, env_id=opts.env_id, task_root=opts.task_root, timeout=opts.timeout)
    sock = socket.socket(fileno=opts.listen_fd)
    server = ThreadingHTTPServer(sock.getsockname(), make_handler(init), bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()

    def stop(*_: object) -> None:
        threading.Thread(target=init.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    watch_parent(opts.parent_pid, stop)
    host, port = sock.getsockname()[:2]
    init.run_runtime(f"{host}:{port}")
    # After an init failure, stay up until LocalStack stops the environment, so its
    # error callback is not raced by a vanished endpoint.
    while not init.stopping.is_set():
        time.sleep(0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
