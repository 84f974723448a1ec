"""LocalStack Lambda runtime executor that runs functions as local processes.

Selected with `LAMBDA_RUNTIME_EXECUTOR=live-ci-process`. Each execution environment
is one `live_ci_localcloud.lambda_init` process (serving LocalStack's `/invoke` and
the Lambda Runtime API) that runs the function's `bootstrap` from the unzipped code.
Only `provided.*` runtimes with zip packages are supported: the code must be a
program for this host (architecture, libc), as a Rust `lambda_runtime` binary or a
script is.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

from localstack import config
from localstack.aws.api.lambda_ import PackageType
from localstack.services.lambda_.invocation.executor_endpoint import (
    ExecutorEndpoint,
    StatusErrorException,
)
from localstack.services.lambda_.invocation.lambda_models import FunctionVersion, InvocationResult
from localstack.services.lambda_.invocation.plugins import RuntimeExecutorPlugin
from localstack.services.lambda_.invocation.runtime_executor import (
    LambdaRuntimeException,
    RuntimeExecutor,
)

from live_ci_localcloud import OWNER_ENV
from live_ci_localcloud.paths import state_dir

LOG = logging.getLogger(__name__)
EXECUTOR_NAME = "live-ci-process"
# Variables of LocalStack's own process that a function process may need (a shell
# bootstrap needs PATH to find curl); everything else comes from the function config.
INHERITED_ENV = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR")


class ProcessRuntimeExecutorPlugin(RuntimeExecutorPlugin):
    name = EXECUTOR_NAME

    def load(self, *args, **kwargs):  # type: ignore[no-untyped-def] - plux signature
        return ProcessRuntimeExecutor


class ProcessRuntimeExecutor(RuntimeExecutor):
    def __init__(self, id: str, function_version: FunctionVersion) -> None:  # noqa: A002 - base signature
        super().__init__(id=id, function_version=function_version)
        # LocalStack's own endpoint implementation receives the init's callbacks
        # (status ready/error, logs, response/error) under /_localstack_lambda/<id>.
        self.executor_endpoint = ExecutorEndpoint(self.id, container_address="127.0.0.1")
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = state_dir() / "lambda" / f"{function_version.id.function_name}-{self.id}.log"

    def start(self, env_vars: dict[str, str]) -> None:
        self.executor_endpoint.start()
        code_dir = str(self.function_version.config.code.get_unzipped_code_location())
        env = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
        # LocalStack hands some values over as ints (memory size, timeout): a process
        # environment only takes strings.
        env.update({key: str(value) for key, value in env_vars.items() if value is not None})
        env["LAMBDA_TASK_ROOT"] = code_dir
        env["LAMBDA_RUNTIME_DIR"] = code_dir
        env[OWNER_ENV] = str(state_dir())
        # The port is bound here and the socket inherited, so no port race and no
        # need to read it back from the child.
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        self.executor_endpoint.container_port = listener.getsockname()[1]
        command = [
            sys.executable,
            "-m",
            "live_ci_localcloud.lambda_init",
            "--listen-fd",
            str(listener.fileno()),
            "--parent-pid",
            str(os.getpid()),
            "--endpoint",
            self.get_runtime_endpoint(),
            "--env-id",
            self.id,
            "--task-root",
            code_dir,
            "--timeout",
            str(self.function_version.config.timeout),
        ]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log_file:
            self.process = subprocess.Popen(
                command,
                env=env,
                cwd=code_dir,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                pass_fds=(listener.fileno(),),
                # Its own process group: stop() signals the init, which takes the
                # runtime's group down with it; LocalStack's group kill does not race it.
                start_new_session=True,
            )
        listener.close()
        LOG.debug("Lambda env %s: init pid %s, log %s", self.id, self.process.pid, self.log_path)
        threading.Thread(target=self._watch_startup, name=f"lambda-init-{self.id}", daemon=True).start()
        self.executor_endpoint.wait_for_startup()

    def _watch_startup(self) -> None:
        """Fail the start at once if the init dies before it reported (not after 20 s)."""
        process = self.process
        if process is None:
            return
        code = process.wait()
        future = self.executor_endpoint.startup_future
        if future is not None and not future.done():
            try:
                future.set_exception(
                    StatusErrorException(
                        f"Environment startup failed: init exited with {code}",
                        payload=json.dumps(
                            {"errorType": "Runtime.ExitError", "errorMessage": f"init exited with {code}"}
                        ).encode(),
                    )
                )
            except Exception:  # noqa: BLE001 - the future may have been settled concurrently
                pass

    def stop(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait(timeout=5)
        try:
            self.executor_endpoint.shutdown()
        except Exception as e:  # noqa: BLE001 - as the docker executor: log and go on
            LOG.debug("Error while stopping executor endpoint %s: %s", self.id, e)

    def get_address(self) -> str:
        return "127.0.0.1"

    def get_endpoint_from_executor(self) -> str:
        # Functions reach LocalStack on loopback (AWS_ENDPOINT_URL, LOCALSTACK_HOSTNAME).
        return "127.0.0.1"

    def get_runtime_endpoint(self) -> str:
        port = config.GATEWAY_LISTEN[0].port
        return f"http://127.0.0.1:{port}{self.executor_endpoint.get_endpoint_prefix()}"

    def invoke(self, payload: dict[str, str]) -> InvocationResult:
        return self.executor_endpoint.invoke(payload)

    def get_logs(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-64 * 1024 :]
        except OSError:
            return ""

    @classmethod
    def prepare_version(cls, function_version: FunctionVersion) -> None:
        cfg = function_version.config
        if cfg.package_type != PackageType.Zip:
            raise LambdaRuntimeException(f"{EXECUTOR_NAME}: only zip packages are supported, not {cfg.package_type}")
        runtime = cfg.runtime or ""
        if not runtime.startswith("provided"):
            raise LambdaRuntimeException(
                f"{EXECUTOR_NAME}: runtime {runtime!r} is not supported; only provided.* "
                "(a bootstrap program for this host) runs without Docker"
            )
        cfg.code.prepare_for_execution()
        bootstrap = Path(cfg.code.get_unzipped_code_location()) / "bootstrap"
        if not bootstrap.is_file():
            raise LambdaRuntimeException(f"{EXECUTOR_NAME}: the code has no 'bootstrap' at its root")

    @classmethod
    def cleanup_version(cls, function_version: FunctionVersion) -> None:
        pass  # the unzipped code belongs to LocalStack's code cache

    @classmethod
    def validate_environment(cls) -> bool:
        return True
