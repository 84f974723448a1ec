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

import codecs
import fcntl
import json
import math
import os
import queue
import signal
import socket
import socketserver
import subprocess
import sys
import termios
import threading
import time
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from live_ci_localcloud.supervise import exit_status, kill_group, spawn_group, watch_parent

RUNTIME_PREFIX = "/2018-06-01/runtime"
# A runtime that keeps crashing while idle is restarted at most this often.
RESTART_BACKOFF_SECONDS = 1.0


def log(message: str) -> None:
    # The init's own stderr is the environment's log file (the executor's get_logs).
    print(f"[live-ci init] {message}", file=sys.stderr, flush=True)


class Invocation:
    # A plain class, not a dataclass: `dataclasses` imports `inspect` and `tokenize`,
    # about 10 ms of every environment's cold start.
    def __init__(self, *, request_id: str, function_arn: str, payload: bytes, trace_id: str) -> None:
        self.request_id = request_id
        self.function_arn = function_arn
        self.payload = payload
        self.trace_id = trace_id
        self.received = time.monotonic()
        self.deadline_ms = 0
        self.done = False


class Init:
    def __init__(self, *, endpoint: str, env_id: str, task_root: str, timeout: float) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.callback_host, self.callback_port, self.callback_path = split_http_url(endpoint)
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
        # Straight to LocalStack's loopback port, one connection per callback: urllib's
        # build_opener made an HTTPS handler whose SSL context loaded every system CA
        # certificate (tens of ms of CPU per callback, two callbacks per invocation)
        # and would go through a proxy from the environment; http.client would cost
        # every environment's cold start its imports (see `read_request`).
        try:
            target = f"{self.callback_path}{path}"
            status = post_http(self.callback_host, self.callback_port, target, body, content_type)
            if not 200 <= status < 300:
                log(f"callback {path} answered {status}")
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


class BadRequest(Exception):
    pass


def split_http_url(url: str) -> tuple[str, int, str]:
    """(host, port, path) of an http:// URL with an explicit host."""
    rest = url.rstrip("/")
    if not rest.startswith("http://"):
        raise ValueError(f"the executor endpoint {url!r} is not an http:// URL")
    authority, _, path = rest[len("http://") :].partition("/")
    host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "80")
    if not host or not port.isdigit():
        raise ValueError(f"the executor endpoint {url!r} has no host and port")
    return host, int(port), f"/{path}" if path else ""


def post_http(host: str, port: int, path: str, body: bytes, content_type: str) -> int:
    """POSTs `body` with `Connection: close` and returns the answer's status code."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((host, port), timeout=30) as connection:
        connection.sendall(head.encode("latin-1") + body)
        answer = bytearray()
        while chunk := connection.recv(65536):
            answer += chunk
    status_line = bytes(answer).split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[1].isdigit():
        raise OSError(f"not an HTTP answer: {bytes(answer[:80])!r}")
    return int(status_line[1])


MAX_LINE = 65536


def read_request(rfile: Any) -> tuple[str, str, dict[str, str], bytes] | None:
    """One HTTP/1.1 request from `rfile`: method, path, headers (lower-case names) and
    body (Content-Length or chunked); None at the end of the connection. Written by
    hand: `http.server` and `http.client` import the `email` package, about 40 ms of
    every environment's cold start, for a server whose only clients are the
    function's runtime and LocalStack's executor."""
    line = rfile.readline(MAX_LINE + 1)
    while line in (b"\r\n", b"\n"):  # tolerated between requests (RFC 9112 2.2)
        line = rfile.readline(MAX_LINE + 1)
    if not line:
        return None
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or len(line) > MAX_LINE or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"bad request line {line[:80]!r}")
    method, path, _version = parts
    headers: dict[str, str] = {}
    while True:
        header = rfile.readline(MAX_LINE + 1)
        if header in (b"\r\n", b"\n", b""):
            break
        name, colon, value = header.decode("latin-1").partition(":")
        if not colon or len(header) > MAX_LINE:
            raise BadRequest(f"bad header line {header[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size_line = rfile.readline(MAX_LINE + 1).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise BadRequest(f"bad chunk size {size_line[:20]!r}") from None
            if size == 0:
                while rfile.readline(MAX_LINE + 1) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                break
            body += rfile.read(size)
            rfile.readline(MAX_LINE + 1)
        return method, path, headers, bytes(body)
    length = headers.get("content-length", "0") or "0"
    if not length.isdigit():
        raise BadRequest(f"bad Content-Length {length!r}")
    return method, path, headers, rfile.read(int(length)) if int(length) else b""


def write_response(wfile: Any, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    lines.append(f"Content-Length: {len(body)}")
    wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    wfile.flush()


def respond(
    init: Init, method: str, path: str, headers: dict[str, str], body: bytes
) -> tuple[int, bytes, dict[str, str]]:
    """The Runtime API's and the executor's answer to one request."""
    json_headers = {"Content-Type": "application/json"}
    if method == "GET":
        if path != f"{RUNTIME_PREFIX}/invocation/next":
            return HTTPStatus.NOT_FOUND, b"", {}
        invocation = init.next_invocation()
        if invocation is None:
            return HTTPStatus.GONE, b"", {}
        return (
            HTTPStatus.OK,
            invocation.payload,
            {
                "Content-Type": "application/json",
                "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
                "Lambda-Runtime-Deadline-Ms": str(invocation.deadline_ms),
                "Lambda-Runtime-Invoked-Function-Arn": invocation.function_arn,
                "Lambda-Runtime-Trace-Id": invocation.trace_id,
            },
        )
    if method != "POST":
        return HTTPStatus.NOT_FOUND, b"", {}
    parts = path.split("/")
    if path == "/invoke":
        init.enqueue(json.loads(body))
        return HTTPStatus.OK, b"", {}
    if path.startswith(f"{RUNTIME_PREFIX}/invocation/") and len(parts) == 6:
        request_id, what = parts[4], parts[5]
        if what not in ("response", "error"):
            return HTTPStatus.NOT_FOUND, b"", {}
        if what == "error" and not body:
            error_type = headers.get("lambda-runtime-function-error-type", "Unhandled")
            body = Init._error_body(error_type, error_type)
        if init.finish(request_id, body, error=what == "error"):
            return HTTPStatus.ACCEPTED, b'{"status":"OK"}', json_headers
        return (
            HTTPStatus.BAD_REQUEST,
            b'{"errorType":"InvalidRequestID","errorMessage":"unknown or finished request"}',
            json_headers,
        )
    if path == f"{RUNTIME_PREFIX}/init/error":
        init.init_failed = True
        init.status("error", body or b"{}")
        return HTTPStatus.ACCEPTED, b'{"status":"OK"}', json_headers
    # Includes the Extensions and Telemetry APIs, which are not emulated.
    return HTTPStatus.NOT_FOUND, b"", {}


def make_handler(init: Init) -> type[socketserver.StreamRequestHandler]:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            # HTTP/1.1: the connection stays for the next request until the client
            # closes it or asks to.
            while True:
                try:
                    request = read_request(self.rfile)
                except BadRequest as e:
                    log(f"runtime api: {e}")
                    write_response(self.wfile, HTTPStatus.BAD_REQUEST, b"", {"Connection": "close"})
                    return
                except OSError:
                    return
                if request is None:
                    return
                method, path, headers, body = request
                status, answer, answer_headers = respond(init, method, path, headers, body)
                try:
                    write_response(self.wfile, status, answer, answer_headers)
                except OSError:
                    return
                if headers.get("connection", "").lower() == "close":
                    return

    return Handler


class RuntimeApiServer(socketserver.ThreadingTCPServer):
    daemon_threads = True


# Every option is required and takes a value: --listen-fd (the inherited listening
# socket), --parent-pid, --endpoint (LocalStack's executor endpoint for this env),
# --env-id, --task-root, --timeout (the function's, in seconds).
OPTIONS = ("listen-fd", "parent-pid", "endpoint", "env-id", "task-root", "timeout")


def parse_options(args: list[str]) -> dict[str, str]:
    """The init's options. Parsed by hand, not with argparse (about 9 ms of every
    environment's cold start for six fixed options); a bad command line is the
    executor's bug, reported with the option it concerns."""
    values: dict[str, str] = {}
    rest = list(args)
    while rest:
        flag = rest.pop(0)
        name = flag[2:] if flag.startswith("--") else ""
        if name not in OPTIONS:
            raise SystemExit(f"lambda_init: unknown argument {flag!r}")
        if not rest:
            raise SystemExit(f"lambda_init: {flag} needs a value")
        values[name] = rest.pop(0)
    missing = [f"--{name}" for name in OPTIONS if name not in values]
    if missing:
        raise SystemExit(f"lambda_init: missing {', '.join(missing)}")
    return values


def main(args: list[str] | None = None) -> int:
    opts = parse_options(sys.argv[1:] if args is None else args)
    try:
        listen_fd, parent_pid, timeout = int(opts["listen-fd"]), int(opts["parent-pid"]), float(opts["timeout"])
    except ValueError as e:
        raise SystemExit(f"lambda_init: {e}") from e

    init = Init(endpoint=opts["endpoint"], env_id=opts["env-id"], task_root=opts["task-root"], timeout=timeout)
    sock = socket.socket(fileno=listen_fd)
    server = RuntimeApiServer(sock.getsockname(), make_handler(init), bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()

    def stop(*_: object) -> None:
        threading.Thread(target=init.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    watch_parent(parent_pid, stop)
    host, port = sock.getsockname()[:2]
    init.run_runtime(f"{host}:{port}")
    # After an init failure, stay up until LocalStack stops the environment, so its
    # error callback is not raced by a vanished endpoint.
    while not init.stopping.is_set():
        time.sleep(0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
