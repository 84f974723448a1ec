"""SES v2 served from LocalStack's bundled moto, with two fixes:

- moto reads path parameters from the raw URL, so an identity named in the path
  arrives URL-encoded (`GET /v2/email/identities/sender%40example.com` looks up
  `sender%40example.com` and fails; Terraform then sees drift or a missing
  resource). Path parameters are decoded before moto sees them.
- sent mail is recorded where LocalStack keeps SES v1 mail, so `GET /_aws/ses`
  (and `?email=<from>`, `?id=<message id>`) lists SES v2 sends too.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import unquote

from localstack.aws.api import RequestContext, ServiceRequest
from localstack.aws.skeleton import DispatchTable, Skeleton
from localstack.aws.spec import load_service
from localstack.services.moto import call_moto, dispatch_to_moto
from localstack.services.plugins import Service, ServiceLifecycleHook
from localstack.services.ses.models import SentEmail, SentEmailBody
from localstack.services.ses.provider import register_ses_api_resource, save_for_retrospection
from moto.sesv2.responses import SESV2Response

_PATCHED = False


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
    return Service("sesv2", skeleton=Skeleton(spec, table), lifecycle_hook=SesV2Lifecycle())
