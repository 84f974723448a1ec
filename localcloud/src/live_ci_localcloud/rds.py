"""RDS served from LocalStack's bundled moto (core LocalStack answers 501), so the
Terraform module's Aurora cluster can be applied locally. Nothing runs behind it:
locally the metadb is the PostgreSQL of scripts/pg.sh (direct adapter).

Two moto answers differ from AWS and make Terraform see drift on every plan; both
are corrected here:
- `HttpEndpointEnabled` (the Data API) is kept only for a few Serverless v1 engine
  versions; AWS supports it on Aurora Serverless v2 and provisioned clusters too.
- `ScalingConfigurationInfo` (Serverless v1 only) is returned with empty values for
  every cluster; AWS omits it unless the cluster has a v1 scaling configuration.
And one that fails the apply: moto's tagging calls do not know cluster parameter
group ARNs (`…:cluster-pg:<name>`, missing from its ARN pattern), so Terraform's
tag read after creating the module's group failed with InvalidParameterValue.
And the managed master password's KMS key: moto describes it in moto's own KMS,
which does not hold LocalStack's keys (CreateDBCluster answered 500, KeyError);
the key id is returned as given instead.
And the managed master secret itself: moto writes `{"username": "admin",
"password": "P@55w0rd!"}` for every cluster; RDS writes the cluster's master user
name and a random password, which the local Data API then requires (rds_data.py).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from localstack.aws.api import RequestContext, ServiceRequest
from localstack.aws.skeleton import DispatchTable, Skeleton
from localstack.aws.spec import load_service
from localstack.services.moto import dispatch_to_moto
from localstack.services.plugins import Service
from moto.rds.models import DBCluster, MasterUserSecret, RDSBackend

_PATCHED = False


def patch_moto() -> None:
    global _PATCHED
    if _PATCHED:
        return
    http_endpoint: property = DBCluster.enable_http_endpoint  # type: ignore[assignment]
    scaling_info: property = DBCluster.scaling_configuration_info  # type: ignore[assignment]

    def set_http_endpoint(self: DBCluster, value: bool | None) -> None:
        self._enable_http_endpoint = bool(value)

    def get_scaling_info(self: DBCluster) -> dict[str, Any] | None:
        return scaling_info.fget(self) if self.scaling_configuration else None  # type: ignore[misc]

    resource_for_tagging = RDSBackend._get_resource_for_tagging

    def get_resource_for_tagging(self: RDSBackend, arn: str) -> Any:
        parts = arn.split(":")
        if len(parts) >= 7 and parts[2] == "rds" and parts[-2] == "cluster-pg":
            return self._find_resource("cluster-pg", parts[-1])
        return resource_for_tagging(self, arn)

    RDSBackend._get_resource_for_tagging = get_resource_for_tagging  # type: ignore[method-assign]

    secret_kms_key_id: property = MasterUserSecret.kms_key_id  # type: ignore[assignment]

    def get_secret_kms_key_id(self: MasterUserSecret) -> str | None:
        try:
            return secret_kms_key_id.fget(self)  # type: ignore[misc]
        except Exception:  # noqa: BLE001 - a key only LocalStack's KMS knows
            return self.secret.kms_key_id

    def generate_secret_string(self: MasterUserSecret) -> str:
        return json.dumps({"username": self.resource.master_username, "password": secrets.token_urlsafe(30)})

    MasterUserSecret._generate_secret_string = generate_secret_string  # type: ignore[method-assign]
    MasterUserSecret.kms_key_id = property(get_secret_kms_key_id)  # type: ignore[method-assign,assignment]
    DBCluster.enable_http_endpoint = property(http_endpoint.fget, set_http_endpoint)  # type: ignore[method-assign,assignment]
    DBCluster.scaling_configuration_info = property(get_scaling_info)  # type: ignore[method-assign,assignment]
    _PATCHED = True


def _proxy(context: RequestContext, _request: ServiceRequest) -> Any:
    return dispatch_to_moto(context)


def create_service() -> Service:
    patch_moto()
    spec = load_service("rds")
    table: DispatchTable = {name: _proxy for name in spec.operation_names}
    return Service("rds", skeleton=Skeleton(spec, table))
