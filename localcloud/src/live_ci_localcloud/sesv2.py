"""SES v2 served from LocalStack's bundled moto, with two fixes:

- moto reads path parameters from the raw URL, so an identity named in the path
  arrives URL-encoded (`GET /v2/email/identities/sender%40example.com` looks up
  `sender%40example.com` and fails; Terraform then sees drift or a missing
  resource). Path parameters are decoded before moto sees them.
- sent mail is recorded where LocalStack keeps SES v1 mail, so `GET /_aws/ses`
  (and `?email=<from>`, `?id=<message id>`) lists SES v2 sends too.

And the sandbox, as a new AWS account's SES starts: SendEmail is refused unless the
sender and, in the sandbox, every recipient (To, Cc, Bcc) is a verified identity
(the address, or its domain), with AWS's own `MessageRejected` ("Email address is
not verified. The following identities failed the check in region US-EAST-1:
<addresses>"). The sandbox is on per account and region unless
`LIVE_CI_SES_SANDBOX=0`; `PutAccountDetails` with `ProductionAccessEnabled` leaves
it (AWS grants that after a review; here at once) and `GetAccount` reports it. IAM
enforcement (iam_actions.py) authorises a sandboxed SendEmail on each recipient's
identity too, as AWS does.
"""

from __future__ import annotations

import base64
import os
import threading
from email.utils import parseaddr
from typing import Any
from urllib.parse import unquote

from localstack.aws.api import CommonServiceException, RequestContext, ServiceRequest
from localstack.aws.skeleton import DispatchTable, Skeleton
from localstack.aws.spec import load_service
from localstack.services.moto import call_moto, dispatch_to_moto
from localstack.services.plugins import Service, ServiceLifecycleHook
from localstack.services.ses.models import SentEmail, SentEmailBody
from localstack.services.ses.provider import register_ses_api_resource, save_for_retrospection
from moto.sesv2.responses import SESV2Response

_PATCHED = False
SANDBOX_ENV = "LIVE_CI_SES_SANDBOX"

# (account, region) -> production access granted (False: in the sandbox).
_production: dict[tuple[str, str], bool] = {}
_production_lock = threading.Lock()


def in_sandbox(account: str, region: str) -> bool:
    """Whether SES of this account and region is in the sandbox (the default)."""
    with _production_lock:
        production = _production.get((account, region))
    if production is None:
        return os.environ.get(SANDBOX_ENV, "1") != "0"
    return not production


def _verified(account: str, region: str, address: str) -> bool:
    from moto.ses.models import ses_backends

    return bool(ses_backends[account][region]._is_verified_address(address))


def recipients(request: ServiceRequest) -> list[str]:
    """Every recipient of a SendEmail request (To, Cc, Bcc), bare addresses."""
    destination = request.get("Destination") or {}
    return [
        parseaddr(a)[1] or a
        for key in ("ToAddresses", "CcAddresses", "BccAddresses")
        for a in destination.get(key) or []
    ]


def unverified(account: str, region: str, request: ServiceRequest) -> list[str]:
    """The identities SES would refuse: the sender's unless verified, and in the
    sandbox each recipient that is not verified (as address or domain)."""
    sender = request.get("FromEmailAddress") or ""
    failed = [] if _verified(account, region, sender) else [sender]
    if in_sandbox(account, region):
        failed += [r for r in recipients(request) if not _verified(account, region, r)]
    return list(dict.fromkeys(failed))


def patch_moto() -> None:
    """Decode URL path parameters in moto's SES v2 responses (idempotent)."""
    global _PATCHED
    if _PATCHED:
        return
    original = SESV2Response._get_param

    def _get_param(self: SESV2Response, param_name: str, if_none: Any = None) -> Any:
        value = original(self, param_name, if_none)
        # Body parameters come decoded already; unquoting them again is harmless for
        # the names SES accepts (no '%' in e-mail addresses, domains or resource names).
        return unquote(value) if isinstance(value, str) else value

    SESV2Response._get_param = _get_param  # type: ignore[method-assign]
    _PATCHED = True


def _proxy(context: RequestContext, _request: ServiceRequest) -> Any:
    return dispatch_to_moto(context)


def send_email(context: RequestContext, request: ServiceRequest) -> Any:
    failed = unverified(context.account_id, context.region, request)
    if failed:
        # AWS's MessageRejected (HTTP 400), naming every identity that failed.
        raise CommonServiceException(
            "MessageRejected",
            "Email address is not verified. The following identities failed the check in region "
            f"{context.region.upper()}: {', '.join(failed)}",
            400,
            sender_fault=True,
        )
    response = call_moto(context)
    destination = request.get("Destination") or {}
    content = request.get("Content") or {}
    email = SentEmail(
        Id=response["MessageId"],
        Region=context.region,
        Destination=destination,
        Source=request.get("FromEmailAddress") or "",
    )
    if simple := content.get("Simple"):
        body = simple.get("Body") or {}
        email["Subject"] = (simple.get("Subject") or {}).get("Data")
        email["Body"] = SentEmailBody(
            text_part=(body.get("Text") or {}).get("Data"),
            html_part=(body.get("Html") or {}).get("Data"),
        )
    elif raw := content.get("Raw"):
        data = raw.get("Data") or b""
        email["RawData"] = (data if isinstance(data, bytes) else base64.b64decode(data)).decode("utf-8", "replace")
    elif template := content.get("Template"):
        email["Template"] = template.get("TemplateName") or template.get("TemplateArn")
        email["TemplateData"] = template.get("TemplateData")
    save_for_retrospection(email)
    return response


def put_account_details(context: RequestContext, request: ServiceRequest) -> Any:
    # AWS reviews a request for production access; the local cloud grants it at once
    # (and, unlike AWS, takes `false` as going back into the sandbox, for tests).
    if request.get("ProductionAccessEnabled") is not None:
        with _production_lock:
            _production[(context.account_id, context.region)] = bool(request["ProductionAccessEnabled"])
    return {}


def get_account(context: RequestContext, _request: ServiceRequest) -> Any:
    return {
        "DedicatedIpAutoWarmupEnabled": False,
        "EnforcementStatus": "HEALTHY",
        "ProductionAccessEnabled": not in_sandbox(context.account_id, context.region),
        "SendingEnabled": True,
        "SendQuota": {"Max24HourSend": 200.0, "MaxSendRate": 1.0, "SentLast24Hours": 0.0},
    }


class SesV2Lifecycle(ServiceLifecycleHook):
    def on_after_init(self) -> None:
        # /_aws/ses is registered by the SES v1 provider when it loads; a client that
        # only uses v2 must find it too.
        register_ses_api_resource()


def create_service() -> Service:
    patch_moto()
    spec = load_service("sesv2")
    table: DispatchTable = {name: _proxy for name in spec.operation_names}
    table["SendEmail"] = send_email
    table["PutAccountDetails"] = put_account_details
    table["GetAccount"] = get_account
    return Service("sesv2", skeleton=Skeleton(spec, table), lifecycle_hook=SesV2Lifecycle())
