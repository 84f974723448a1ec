"""IAM enforced in the local cloud (LIVE_CI_IAM_ENFORCE=1): every AWS request signed
with credentials the local cloud issued for a role (STS AssumeRole: Lambda execution
roles, ECS task and execution roles, the state machine's role, roles assumed by code)
is authorised as AWS would, before the service sees it; a denied one gets the
service's own AccessDenied error. Credentials the local cloud did not issue (the test
driver's, the account-id key) are the account's administrator, as in AWS.

What is evaluated: `iam_actions` maps the operation to its authorisations, `iam_policy`
decides each against the role's identity policies (inline and attached) and the
resource's policy. Counts, denials and which statements allowed what are served at
GET /_live_ci/iam/stats (DELETE resets them), for the e2e's report and the
least-privilege check.

aws:SecureTransport is "true": the local endpoint is plain HTTP on loopback standing
in for AWS's HTTPS endpoints, which every SDK live-ci uses reaches over TLS.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections import Counter, deque
from typing import Any

from localstack.runtime import hooks

from live_ci_localcloud import iam_actions, iam_policy, lambda_logs

LOG = logging.getLogger(__name__)
ENV = "LIVE_CI_IAM_ENFORCE"
STATS_PATH = "/_live_ci/iam/stats"


def enabled() -> bool:
    return os.environ.get(ENV, "") == "1"


class Stats:
    """What the enforcer decided since start (or the last reset)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with getattr(self, "lock", threading.Lock()):
            self.authorised = 0
            self.denied = 0
            self.unmapped: Counter[str] = Counter()
            # action -> the roles that made it: the e2e fails on an unmapped call of
            # live-ci's own roles (repository code's, as a target account's role, is
            # terraform's to make and cannot all be listed).
            self.unmapped_roles: dict[str, set[str]] = {}
            self.denials: deque[dict[str, str]] = deque(maxlen=500)
            # statement label -> [requests it allowed, requests it alone allowed]; every
            # statement of a policy the evaluator read is here, so 0 means "allowed nothing".
            self.statements: dict[str, list[int]] = {}

    def unmapped_call(self, action: str, role: str) -> None:
        with self.lock:
            self.unmapped[action] += 1
            self.unmapped_roles.setdefault(action, set()).add(role)

    def know(self, statements: Any) -> None:
        with self.lock:
            for st in statements:
                self.statements.setdefault(st.label, [0, 0])

    def allow(self, allowing: list[iam_policy.Statement]) -> None:
        with self.lock:
            self.authorised += 1
            for st in allowing:
                counts = self.statements.setdefault(st.label, [0, 0])
                counts[0] += 1
                if len(allowing) == 1:
                    counts[1] += 1

    def deny(self, role: str, action: str, resource: str, message: str) -> None:
        with self.lock:
            self.denied += 1
            self.denials.append({"role": role, "action": action, "resource": resource, "message": message})

    def document(self) -> dict[str, Any]:
        with self.lock:
            return {
                "enforced": enabled(),
                "authorised": self.authorised,
                "denied": self.denied,
                "denials": list(self.denials),
                "unmapped": dict(self.unmapped),
                "unmapped_roles": {k: sorted(v) for k, v in sorted(self.unmapped_roles.items())},
                "statements": {k: {"allowed": v[0], "sole": v[1]} for k, v in sorted(self.statements.items())},
            }


STATS = Stats()


@functools.lru_cache(maxsize=1024)
def _parsed(document: str, source: str) -> tuple[iam_policy.Statement, ...]:
    return tuple(iam_policy.parse_policy(document, source))


def role_statements(account: str, role_name: str) -> tuple[str, list[iam_policy.Statement]] | None:
    """(role ARN, its identity policies' statements: inline, then attached managed)."""
    from localstack.services.iam.models import iam_stores

    store = iam_stores[account]["us-east-1"]
    entity = store.ROLES.get(role_name)
    if entity is None:
        return None
    statements: list[iam_policy.Statement] = []
    for name, document in sorted(entity.inline_policies.items()):
        statements += _parsed(document, f"role/{role_name} inline {name}")
    for arn in entity.attached_policy_arns:
        managed = store.MANAGED_POLICIES.get(arn)
        if managed is None:
            continue
        version = managed.versions.get(managed.policy.get("DefaultVersionId", "v1"))
        if version is not None and version.get("Document"):
            statements += _parsed(version["Document"], f"role/{role_name} attached {arn}")
    return entity.role["Arn"], statements


def issued_session(context: Any) -> Any:
    """The STS session of the request's access key, if the local cloud issued it."""
    from localstack.services.sts.models import sts_stores
    from localstack.utils.aws.request_context import extract_access_key_id_from_auth_header

    key = extract_access_key_id_from_auth_header(context.request.headers)
    if not key:
        return None
    return sts_stores[context.account_id]["us-east-1"].credentials.get(key)


def denial_error(context: Any, message: str) -> Exception:
    """The service's own AccessDenied: JSON services answer AccessDeniedException with
    400, REST-JSON ones with 403, query/XML ones (STS, S3) AccessDenied with 403, SNS
    AuthorizationError with 403."""
    from localstack.aws.api import CommonServiceException

    protocol = context.service.protocol
    if context.service.service_name == "sns":
        # SNS's own code (AuthorizationError, 403), as SDKs and Step Functions see it.
        return CommonServiceException("AuthorizationError", message, 403, sender_fault=True)
    if protocol == "json":
        return CommonServiceException("AccessDeniedException", message, 400, sender_fault=True)
    if protocol == "rest-json":
        return CommonServiceException("AccessDeniedException", message, 403, sender_fault=True)
    return CommonServiceException("AccessDenied", message, 403, sender_fault=True)


def authorise(context: Any) -> None:
    """Raises the service's AccessDenied when the request's issued role may not make it."""
    session = issued_session(context)
    if session is None or not session.arn.split(":", 5)[-1].startswith("assumed-role/"):
        return
    role_name = session.arn.split("/")[1]
    found = role_statements(session.account_id, role_name)
    role_arn, identity = found if found is not None else (f"arn:aws:iam::{session.account_id}:role/{role_name}", [])
    global_context = {
        "aws:SecureTransport": "true",
        "aws:PrincipalArn": role_arn,
        "aws:PrincipalAccount": session.account_id,
        "aws:userid": session.user_id,
    }
    service = context.service.service_name
    operation = context.operation.name
    call = iam_actions.Call(
        account=context.account_id,
        region=context.region,
        operation=operation,
        params=dict(context.service_request or {}),
        global_context=global_context,
    )
    try:
        checks = iam_actions.checks_for(service, call)
    except iam_actions.Unmapped:
        # Not one of the operations the table maps (terraform's own calls as a target
        # account's role, say): authorised as <prefix>:<Operation> on "*", which only a
        # statement granting every resource allows. Counted, to extend the table.
        prefix = getattr(context.service, "signing_name", None) or service
        checks = [iam_actions.Check(f"{prefix}:{operation}", "*", dict(global_context))]
        STATS.unmapped_call(f"{prefix}:{operation}", role_arn)
    except (AttributeError, KeyError, TypeError, ValueError, iam_policy.PolicyError) as e:
        # A request the table cannot read, or a policy the evaluator cannot: refused
        # (never allowed unchecked), naming why.
        message = (
            f"User: {session.arn} is not authorized to perform: {service}:{operation} because the local "
            f"cloud could not evaluate it: {type(e).__name__}: {e}"
        )
        STATS.deny(role_arn, f"{service}:{operation}", "?", message)
        LOG.exception("IAM: %s", message)
        raise denial_error(context, message) from None
    STATS.know(identity)
    for check in checks:
        request = iam_policy.Request(
            principal_arn=session.arn,
            role_arn=role_arn,
            account_id=session.account_id,
            action=check.action,
            resource=check.resource,
            context=check.context,
        )
        resource_statements = (
            list(_parsed(check.resource_policy, check.policy_source)) if check.resource_policy else None
        )
        if resource_statements:
            STATS.know(resource_statements)
        decision = iam_policy.evaluate(
            request, identity, resource_statements, key_policy=check.must_allow, owner_account=check.owner_account
        )
        if not decision.allowed:
            message = decision.message(request)
            STATS.deny(role_arn, check.action, check.resource, message)
            LOG.warning("IAM: %s", message)
            raise denial_error(context, message)
        STATS.allow(decision.allowing)


def handler(chain: Any, context: Any, response: Any) -> None:
    """A request handler (after the request is parsed, before the service)."""
    if context.service is None or context.operation is None or not enabled():
        return
    authorise(context)


_installed = False


def install() -> None:
    """Adds the handler to LocalStack's chain and the stats endpoint. Idempotent."""
    global _installed
    if _installed:
        return
    from localstack.aws import handlers
    from localstack.http import Request, Response, route
    from localstack.services.edge import ROUTER

    class StatsEndpoint:
        @route(STATS_PATH, methods=["GET"])
        def get(self, request: Request) -> Response:
            import json

            return Response(json.dumps(STATS.document()), mimetype="application/json")

        @route(STATS_PATH, methods=["DELETE"])
        def delete(self, request: Request) -> Response:
            STATS.reset()
            return Response(status=204)

    handlers.serve_custom_service_request_handlers.append(handler)
    ROUTER.add(StatsEndpoint())
    # Lambda's log delivery must not need more than AWS's does (see lambda_logs.py).
    lambda_logs.patch()
    _installed = True
    LOG.info("live-ci IAM enforcement %s", "on" if enabled() else "off (set LIVE_CI_IAM_ENFORCE=1)")


@hooks.on_infra_start()
def install_iam_enforcement() -> None:
    """The `localstack.hooks.on_infra_start` entry point (pyproject.toml)."""
    install()
