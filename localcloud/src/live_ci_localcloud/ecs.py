"""ECS served from LocalStack's bundled moto, plus an agent that runs every task as a
local process.

moto keeps the API state (clusters, task definitions, tasks); on RunTask (including
the one Step Functions' `ecs:runTask[.sync|.waitForTaskToken]` makes) the agent starts
the task's first container as a process:
- argv: the image's executable (see `images.py`), or the container's `entryPoint`,
  followed by the override's command or else the container's command;
- environment: a few host variables, AWS endpoint and region for LocalStack, the task
  role's credentials as Fargate serves them (a container credentials endpoint, see
  `TaskCredentials`), `ECS_CONTAINER_METADATA_URI_V4` (a task metadata endpoint v4 served by LocalStack:
  `${uri}` the container, `${uri}/task` the task, with its awslogs stream), then the
  container's environment, then the override's (later wins);
- output: `<state>/ecs-tasks/<task-id>.log`, and the CloudWatch Logs group/stream of
  the container's `awslogs` configuration (`<prefix>/<container>/<task-id>`);
- status: RUNNING while the process runs, then STOPPED with the container's exit
  code (DescribeTasks, and so `.sync` integrations, see it). StopTask stops it.
- user: as Fargate honours the image's `USER`, the task runs as the image's
  non-root uid (`TASK_UID`), holding only the capabilities the image's binary gets
  from its file capabilities (`CAP_SETUID`, `CAP_SETGID`, `CAP_KILL`: it starts
  repository code as the image's child user, `CHILD_UID`, whose group it is a
  member of), through `setpriv` (util-linux); its home is its work directory. The
  image's `LIVE_CI_CHILD_UID` / `LIVE_CI_CHILD_GID` come first in its environment.
  A LocalStack that is not root cannot switch users: tasks then run as its user.
moto models one container per task, so only the first container definition runs.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any

from localstack import config
from localstack.aws.api import RequestContext, ServiceRequest
from localstack.aws.connect import connect_to
from localstack.aws.skeleton import DispatchTable, Skeleton
from localstack.aws.spec import load_service
from localstack.constants import INTERNAL_AWS_SECRET_ACCESS_KEY
from localstack.http import Request, Response, route
from localstack.services.edge import ROUTER
from localstack.services.moto import call_moto, call_moto_with_request, dispatch_to_moto
from localstack.services.plugins import Service, ServiceLifecycleHook
from moto.ec2.models import ec2_backends
from moto.ecs.models import EC2ContainerServiceBackend, Task, ecs_backends
from moto.moto_api import state_manager

from live_ci_localcloud import OWNER_ENV
from live_ci_localcloud.images import ImageResolutionError, resolve_command
from live_ci_localcloud.paths import state_dir

LOG = logging.getLogger(__name__)
# Host variables a task process inherits; everything else is the task's own.
INHERITED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR")
# The task metadata endpoint v4 (ECS_CONTAINER_METADATA_URI_V4), served by LocalStack.
METADATA_PREFIX = "/_live_ci/ecs-metadata"
# The container credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI), served by LocalStack.
CREDENTIALS_PREFIX = "/_live_ci/ecs-credentials"
# Credentials are assumed again when less than this is left of their life (the SDKs
# refresh about 5 minutes before expiry; they get a fresh hour then).
CREDENTIALS_REFRESH_SECONDS = 900
# The task image's users (ecs-task/Dockerfile): `USER 10001:10001` (live-ci) and the child user.
TASK_UID = 10001
CHILD_UID = 10002
# What the image's binary holds through its file capabilities.
TASK_CAPS = "+setuid,+setgid,+kill"
LOG_FLUSH_SECONDS = 1.0
LOG_BATCH_LINES = 500


def _proxy(context: RequestContext, _request: ServiceRequest) -> Any:
    return dispatch_to_moto(context)


_PATCHED = False
MEMORY_KEYS = ("memory", "memoryReservation", "Memory", "MemoryReservation")


def patch_moto() -> None:
    """moto sums container-level memory to place a task and fails (None + int) on a
    Fargate task definition whose containers leave memory to the task level, which is
    the usual Fargate (and Terraform) shape. Count such containers as 0 MiB."""
    global _PATCHED
    if _PATCHED:
        return
    original = EC2ContainerServiceBackend._calculate_task_resource_requirements

    def requirements(task_definition: Any) -> dict[str, Any]:
        view = copy.copy(task_definition)
        view.container_definitions = [
            d if any(d.get(k) is not None for k in MEMORY_KEYS) else {**d, "memory": 0}
            for d in task_definition.container_definitions
        ]
        return original(view)

    EC2ContainerServiceBackend._calculate_task_resource_requirements = staticmethod(requirements)  # type: ignore[method-assign]
    _PATCHED = True


class TaskCredentials:
    """A role's credentials for one task, as ECS issues them: assumed through the local
    cloud's STS (session name: the task id, as ECS names it), so every request signed
    with them is that role's (and evaluated as such when IAM is enforced).

    Fargate serves the task role's credentials at 169.254.170.2 under a secret path it
    puts in AWS_CONTAINER_CREDENTIALS_RELATIVE_URI. That address is not reachable here,
    so the task gets the equivalent the SDKs accept on loopback:
    AWS_CONTAINER_CREDENTIALS_FULL_URI = http://127.0.0.1:<port>/_live_ci/ecs-credentials/<secret>,
    the secret being 256 random bits, like the relative URI a per-task secret path."""

    def __init__(self, account_id: str, region: str, role_arn: str, session_name: str) -> None:
        self.account_id = account_id
        self.region = region
        self.role_arn = role_arn
        self.session_name = session_name
        self.token = secrets.token_urlsafe(32)
        self.lock = threading.Lock()
        self.current: dict[str, Any] | None = None

    def get(self) -> dict[str, Any]:
        """The role's credentials (AccessKeyId, SecretAccessKey, SessionToken, Expiration)."""
        with self.lock:
            current = self.current
            if (
                current is None
                or (current["Expiration"] - datetime.now(UTC)).total_seconds() < CREDENTIALS_REFRESH_SECONDS
            ):
                # The account's own key: ECS assumes the role, not the task.
                sts = connect_to(
                    region_name=self.region,
                    aws_access_key_id=self.account_id,
                    aws_secret_access_key=INTERNAL_AWS_SECRET_ACCESS_KEY,
                ).sts.request_metadata(service_principal="ecs-tasks")
                current = sts.assume_role(RoleArn=self.role_arn, RoleSessionName=self.session_name)["Credentials"]
                self.current = current
            return current

    def endpoint_document(self) -> dict[str, Any]:
        """The container credentials endpoint's answer, as the SDKs read it."""
        credentials = self.get()
        return {
            "AccessKeyId": credentials["AccessKeyId"],
            "SecretAccessKey": credentials["SecretAccessKey"],
            "Token": credentials["SessionToken"],
            "Expiration": credentials["Expiration"].strftime("%Y-%m-%dT%H:%M:%SZ"),
            "RoleArn": self.role_arn,
        }


class TaskProcess:
    """One running task: the supervised process, its log pump and its status."""

    def __init__(self, agent: EcsAgent, backend: EC2ContainerServiceBackend, task: Task) -> None:
        self.agent = agent
        self.backend = backend
        self.task = task
        self.process: subprocess.Popen[bytes] | None = None
        self.stop_reason: str | None = None
        self.log_path = state_dir() / "ecs-tasks" / f"{task.id}.log"
        self.task_definition = backend.describe_task_definition(task.task_definition_arn)
        self.container = self.task_definition.container_definitions[0]
        self.cloudwatch = self.cloudwatch_target(self.container, self.container.get("name", ""))
        # The roles ECS issues credentials for: the task's own (the override's, else the
        # definition's) and the execution role (what the agent does for the task: logs).
        task_role = self.task.overrides.get("taskRoleArn") or getattr(self.task_definition, "task_role_arn", None)
        execution_role = self.task.overrides.get("executionRoleArn") or getattr(
            self.task_definition, "execution_role_arn", None
        )
        self.task_credentials = (
            TaskCredentials(backend.account_id, task.region_name, task_role, task.id) if task_role else None
        )
        self.execution_credentials = (
            TaskCredentials(backend.account_id, task.region_name, execution_role, task.id) if execution_role else None
        )

    def start(self) -> None:
        container = self.container
        name = container.get("name", "")
        override = next((o for o in self.task.overrides.get("containerOverrides", []) if o.get("name") == name), {})
        command = override.get("command") or container.get("command") or []
        env = {key: os.environ[key] for key in INHERITED_ENV if key in os.environ}
        # The image's own environment (ecs-task/Dockerfile's ENV).
        env.update({"LIVE_CI_CHILD_UID": str(CHILD_UID), "LIVE_CI_CHILD_GID": str(CHILD_UID)})
        env.update(self.aws_env())
        for source in (container.get("environment") or [], override.get("environment") or []):
            env.update({item["name"]: str(item.get("value", "")) for item in source})
        env[OWNER_ENV] = str(state_dir())
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            argv = resolve_command(container.get("image", ""), container.get("entryPoint"), command)
        except ImageResolutionError as e:
            self.log_path.write_text(f"live-ci local cloud: {e}\n")
            self.finished(exit_code=None, reason=f"CannotPullContainerError: {e}")
            return
        work_dir = self.work_dir()
        argv = self.as_task_user(argv, env, work_dir)
        LOG.info("ECS task %s: running %s", self.task.id, argv)
        self.set_running()
        # The supervisor ties the task's process tree to LocalStack's life; it stays
        # LocalStack's user, so it can stop the task whatever the task's user.
        self.process = subprocess.Popen(
            [sys.executable, "-m", "live_ci_localcloud.supervise", "--parent-pid", str(os.getpid()), "--", *argv],
            env=env,
            cwd=work_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        threading.Thread(target=self.pump, name=f"ecs-task-{self.task.id}", daemon=True).start()

    def aws_env(self) -> dict[str, str]:
        region = self.task.region_name
        port = config.GATEWAY_LISTEN[0].port
        env = {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            # As on Fargate: the task finds its own ARN, cluster and log stream here.
            "ECS_CONTAINER_METADATA_URI_V4": f"http://127.0.0.1:{port}{METADATA_PREFIX}/{self.task.id}",
            "ECS_TASK_ARN": self.task.task_arn,
            "ECS_CLUSTER": self.task.cluster_name,
        }
        # As on Fargate: no key in the environment; a task without a task role has no
        # credentials at all.
        if self.task_credentials is not None:
            self.agent.credentials[self.task_credentials.token] = self.task_credentials
            env["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = (
                f"http://127.0.0.1:{port}{CREDENTIALS_PREFIX}/{self.task_credentials.token}"
            )
        return env

    def work_dir(self) -> str:
        path = state_dir() / "ecs-tasks" / self.task.id
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            # The task's own (its home, as /home/live-ci is in the image).
            os.chown(path, TASK_UID, TASK_UID)
            path.chmod(0o700)
        return str(path)

    @staticmethod
    def as_task_user(argv: list[str], env: dict[str, str], home: str) -> list[str]:
        """argv run as the image's user: uid and gid TASK_UID, a member of the child's
        group, with the image binary's capabilities as ambient ones (so they survive
        the exec of an unmarked binary), the parent-death signal set again after the
        user change (which clears it)."""
        if os.geteuid() != 0:
            LOG.warning("LocalStack is not root: ECS tasks run as its own user, not uid %s", TASK_UID)
            return argv
        env["HOME"] = home
        # The repositories the local cloud's tasks clone are local paths of LocalStack's
        # user, which git refuses to read for another owner ("dubious ownership"); in
        # AWS they come over HTTPS, where git makes no such check.
        gitconfig = os.path.join(home, ".gitconfig")
        with open(gitconfig, "w") as f:
            f.write("[safe]\n\tdirectory = *\n")
        os.chown(gitconfig, TASK_UID, TASK_UID)
        # The task's git reads no ~/.gitconfig unless its environment names one
        # (crates/git/src/cli.rs: the child may own a HOME's file); this one is the
        # task user's, and not writable by the child.
        env["GIT_CONFIG_GLOBAL"] = gitconfig
        # A temporary directory of the task's own, as a container's /tmp: the child
        # user passes through it to the checkouts the task shares with it. Short, in
        # LocalStack's own temporary directory: terraform's providers listen on unix
        # sockets made there, whose paths may not exceed 107 bytes.
        tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"ecs-{os.path.basename(home)[:8]}")
        os.makedirs(tmp, exist_ok=True)
        os.chown(tmp, TASK_UID, TASK_UID)
        os.chmod(tmp, 0o711)
        env["TMPDIR"] = tmp
        return [
            "setpriv",
            f"--reuid={TASK_UID}",
            f"--regid={TASK_UID}",
            f"--groups={CHILD_UID}",
            f"--inh-caps={TASK_CAPS}",
            f"--ambient-caps={TASK_CAPS}",
            "--pdeathsig=KILL",
            "--",
            *argv,
        ]

    def cloudwatch_target(self, container: dict[str, Any], name: str) -> tuple[str, str, str] | None:
        log_config = container.get("logConfiguration") or {}
        options = log_config.get("options") or {}
        group = options.get("awslogs-group")
        if log_config.get("logDriver") != "awslogs" or not group:
            return None
        prefix = options.get("awslogs-stream-prefix")
        stream = f"{prefix}/{name}/{self.task.id}" if prefix else self.task.id
        return group, stream, options.get("awslogs-region") or self.task.region_name

    def container_metadata(self) -> dict[str, Any]:
        """The container's entry of the ECS task metadata endpoint v4."""
        name = self.container.get("name", "")
        family, revision = self.task_definition.family, str(self.task_definition.revision)
        container = self.task.containers[0]
        metadata: dict[str, Any] = {
            "DockerId": self.task.id,
            "Name": name,
            "DockerName": f"ecs-{family}-{revision}-{name}",
            "Image": self.container.get("image", ""),
            "Labels": {
                "com.amazonaws.ecs.cluster": self.task.cluster_arn,
                "com.amazonaws.ecs.container-name": name,
                "com.amazonaws.ecs.task-arn": self.task.task_arn,
                "com.amazonaws.ecs.task-definition-family": family,
                "com.amazonaws.ecs.task-definition-version": revision,
            },
            "DesiredStatus": self.task.desired_status,
            "KnownStatus": container.last_status,
            "Type": "NORMAL",
            "ContainerARN": container.container_arn,
        }
        if getattr(container, "exit_code", None) is not None:
            metadata["ExitCode"] = container.exit_code
        log_config = self.container.get("logConfiguration") or {}
        if log_config:
            metadata["LogDriver"] = log_config.get("logDriver")
            options = dict(log_config.get("options") or {})
            if self.cloudwatch is not None:
                options["awslogs-stream"] = self.cloudwatch[1]
            metadata["LogOptions"] = options
        return metadata

    def task_metadata(self) -> dict[str, Any]:
        """The task metadata endpoint v4's `/task` document."""
        return {
            "Cluster": self.task.cluster_arn,
            "TaskARN": self.task.task_arn,
            "Family": self.task_definition.family,
            "Revision": str(self.task_definition.revision),
            "DesiredStatus": self.task.desired_status,
            "KnownStatus": self.task.last_status,
            "LaunchType": self.task.launch_type or "FARGATE",
            "AvailabilityZone": f"{self.task.region_name}a",
            "Containers": [self.container_metadata()],
        }

    def set_running(self) -> None:
        now = datetime.now(UTC)
        self.task.last_status = "RUNNING"
        self.task.started_at = now
        for container in self.task.containers:
            container.last_status = "RUNNING"

    def pump(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        pending: list[dict[str, Any]] = []
        last_flush = time.monotonic()
        logs = self.logs_client()
        with open(self.log_path, "ab") as log_file:
            for raw in iter(self.process.stdout.readline, b""):
                log_file.write(raw)
                log_file.flush()
                message = raw.decode("utf-8", "replace").rstrip("\n")
                pending.append({"timestamp": int(time.time() * 1000), "message": message or " "})
                if len(pending) >= LOG_BATCH_LINES or time.monotonic() - last_flush >= LOG_FLUSH_SECONDS:
                    self.put_logs(logs, pending)
                    pending, last_flush = [], time.monotonic()
        code = self.process.wait()
        self.put_logs(logs, pending)
        self.finished(exit_code=code, reason=self.stop_reason or "Essential container in task exited")

    def logs_client(self) -> Any:
        if self.cloudwatch is None:
            return None
        group, stream, region = self.cloudwatch
        if self.execution_credentials is not None:
            # The awslogs driver writes as the task's execution role.
            credentials = self.execution_credentials.get()
            client = connect_to(
                region_name=region,
                aws_access_key_id=credentials["AccessKeyId"],
                aws_secret_access_key=credentials["SecretAccessKey"],
                aws_session_token=credentials["SessionToken"],
            ).logs
        else:
            # No execution role (Fargate would refuse awslogs then): the account's key.
            client = connect_to(
                region_name=region,
                aws_access_key_id=self.backend.account_id,
                aws_secret_access_key=INTERNAL_AWS_SECRET_ACCESS_KEY,
            ).logs
        options = (self.container.get("logConfiguration") or {}).get("options") or {}
        # As the awslogs driver: the group is created only when asked (awslogs-create-group),
        # which needs logs:CreateLogGroup; else it must exist.
        if str(options.get("awslogs-create-group", "")).lower() == "true" or self.execution_credentials is None:
            try:
                client.create_log_group(logGroupName=group)
            except client.exceptions.ResourceAlreadyExistsException:
                pass
        try:
            client.create_log_stream(logGroupName=group, logStreamName=stream)
        except client.exceptions.ResourceAlreadyExistsException:
            pass
        return client

    def put_logs(self, client: Any, events: list[dict[str, Any]]) -> None:
        if client is None or not events or self.cloudwatch is None:
            return
        group, stream, _ = self.cloudwatch
        try:
            client.put_log_events(logGroupName=group, logStreamName=stream, logEvents=events)
        except Exception as e:  # noqa: BLE001 - logs are best effort, the file has them all
            LOG.warning("ECS task %s: cannot write to CloudWatch Logs %s/%s: %s", self.task.id, group, stream, e)

    def finished(self, *, exit_code: int | None, reason: str) -> None:
        now = datetime.now(UTC)
        if exit_code is not None and exit_code < 0:
            exit_code = 128 - exit_code
        for container in self.task.containers:
            container.last_status = "STOPPED"
            container.exitCode = exit_code
            container.exit_code = exit_code
            if exit_code is None:
                container.reason = reason
        self.task.stopped_reason = reason
        self.task.stop_code = "UserInitiated" if self.stop_reason else "EssentialContainerExited"
        self.task.desired_status = "STOPPED"
        self.task.stopping_at = now
        self.task.execution_stopped_at = now
        self.task.stopped_at = now
        self.task.last_status = "STOPPED"
        LOG.info("ECS task %s stopped: exit code %s (%s)", self.task.id, exit_code, reason)
        self.agent.forget(self.task.task_arn)
        if self.task_credentials is not None:
            # The endpoint stops answering for a stopped task, as on Fargate.
            self.agent.credentials.pop(self.task_credentials.token, None)

    def stop(self, reason: str) -> None:
        self.stop_reason = reason
        if self.process is not None and self.process.poll() is None:
            # The supervisor forwards it to the task's process group (SIGTERM, then SIGKILL).
            self.process.terminate()


def localize_network(context: RequestContext, request: ServiceRequest) -> ServiceRequest:
    """Make an awsvpc network configuration acceptable to moto.

    moto creates an ENI in the named subnet and needs `securityGroups` (optional in
    AWS). Locally the network is meaningless (tasks are host processes), so a subnet
    moto's EC2 does not know (e.g. placeholder ids in a local Terraform example) is
    replaced by one of its default subnets instead of failing the task.
    """
    network = (request.get("networkConfiguration") or {}).get("awsvpcConfiguration")
    if not network:
        return request
    ec2 = ec2_backends[context.account_id][context.region]
    subnets = []
    for subnet_id in network.get("subnets") or []:
        try:
            ec2.get_subnet(subnet_id)
            subnets.append(subnet_id)
        except Exception:  # noqa: BLE001 - moto raises its own InvalidSubnetIdError
            LOG.info("ECS RunTask: subnet %s is unknown locally, using a default subnet", subnet_id)
    if not subnets:
        default = next((s for zone in ec2.subnets.values() for s in zone.values()), None)
        if default is not None:
            subnets = [default.id]
    network = {**network, "subnets": subnets, "securityGroups": network.get("securityGroups") or []}
    return {**request, "networkConfiguration": {**request["networkConfiguration"], "awsvpcConfiguration": network}}


class EcsAgent(ServiceLifecycleHook):
    def __init__(self) -> None:
        # moto's default moves a task straight to STOPPED on the first describe; the
        # agent owns the task's status instead.
        state_manager.set_transition("ecs::task", {"progression": "manual", "times": sys.maxsize})
        self.lock = threading.Lock()
        self.tasks: dict[str, TaskProcess] = {}
        # Every task started since LocalStack started, by task id, for the metadata endpoint.
        self.started: dict[str, TaskProcess] = {}
        # The container credentials endpoint's secrets, of running tasks only.
        self.credentials: dict[str, TaskCredentials] = {}
        ROUTER.add(self)

    @route(f"{CREDENTIALS_PREFIX}/<token>", methods=["GET"])
    def get_task_credentials(self, request: Request, token: str) -> Response:
        credentials = self.credentials.get(token)
        if credentials is None:
            return Response(status=404)
        return Response(json.dumps(credentials.endpoint_document()), mimetype="application/json")

    @route(f"{METADATA_PREFIX}/<task_id>", methods=["GET"])
    def get_container_metadata(self, request: Request, task_id: str) -> Response:
        runner = self.started.get(task_id)
        if runner is None:
            return Response(status=404)
        return Response(json.dumps(runner.container_metadata()), mimetype="application/json")

    @route(f"{METADATA_PREFIX}/<task_id>/task", methods=["GET"])
    def get_task_metadata(self, request: Request, task_id: str) -> Response:
        runner = self.started.get(task_id)
        if runner is None:
            return Response(status=404)
        return Response(json.dumps(runner.task_metadata()), mimetype="application/json")

    def on_before_stop(self) -> None:
        with self.lock:
            running = list(self.tasks.values())
        for task in running:
            task.stop("LocalStack is shutting down")
        for task in running:
            if task.process is not None:
                try:
                    task.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    task.process.kill()

    def forget(self, task_arn: str) -> None:
        with self.lock:
            self.tasks.pop(task_arn, None)

    def run_task(self, context: RequestContext, request: ServiceRequest) -> Any:
        backend = ecs_backends[context.account_id][context.region]
        cluster = backend._get_cluster(request.get("cluster") or "default")
        request = localize_network(context, request)
        if (
            not request.get("launchType")
            and not request.get("capacityProviderStrategy")
            and not backend.container_instances.get(cluster.name)
        ):
            # Without registered container instances moto can place only Fargate tasks
            # (EC2 ones fail with "No instances found"); locally they are all processes.
            request = {**request, "launchType": "FARGATE"}
        response = call_moto_with_request(context, request)
        for described in response.get("tasks", []):
            # moto gives a container's cpu (and memory) as numbers; the API's
            # are strings, and strict clients (the Rust SDK) refuse the response.
            for item in [described, *described.get("containers", [])]:
                for key in ("cpu", "memory", "memoryReservation"):
                    if key in item and not isinstance(item[key], str):
                        item[key] = str(item[key])
            task = backend.tasks.get(cluster.name, {}).get(described["taskArn"])
            if task is None:
                continue
            runner = TaskProcess(self, backend, task)
            with self.lock:
                self.tasks[task.task_arn] = runner
                self.started[task.id] = runner
            runner.start()
            described["lastStatus"] = task.last_status
            for container in described.get("containers", []):
                container["lastStatus"] = task.containers[0].last_status
        return response

    def stop_task(self, context: RequestContext, request: ServiceRequest) -> Any:
        backend = ecs_backends[context.account_id][context.region]
        cluster = backend._get_cluster(request.get("cluster") or "default")
        task_ref = request["task"]
        arn = next(
            (a for a in backend.tasks.get(cluster.name, {}) if a == task_ref or a.endswith(f"/{task_ref}")), None
        )
        with self.lock:
            runner = self.tasks.get(arn) if arn else None
        if runner is None:
            return call_moto(context)
        runner.stop(request.get("reason") or "Task stopped by user")
        if runner.process is not None:
            try:
                runner.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                runner.process.kill()
        # Wait for the pump to record the final status, so the response shows it.
        deadline = time.monotonic() + 5
        while runner.task.last_status != "STOPPED" and time.monotonic() < deadline:
            time.sleep(0.02)
        return call_moto(context)


def create_service() -> Service:
    patch_moto()
    spec = load_service("ecs")
    agent = EcsAgent()
    table: DispatchTable = {name: _proxy for name in spec.operation_names}
    table["RunTask"] = agent.run_task
    table["StopTask"] = agent.stop_task
    return Service("ecs", skeleton=Skeleton(spec, table), lifecycle_hook=agent)
