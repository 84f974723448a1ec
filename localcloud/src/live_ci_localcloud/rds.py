"""RDS served from LocalStack's bundled moto (core LocalStack answers 501), so the
Terraform module's Aurora cluster can be applied locally. Nothing runs behind it:
locally the metadb is the PostgreSQL of scripts/pg.sh (direct adapter).

Two moto answers differ from AWS and make Terraform see drift on every plan; both
are corrected here:
- `HttpEndpointEnabled` (the Data API) is kept only for a few Serverless v1 engine
  versions; AWS supports it on Aurora Serverless v2 and provisioned clusters too.
- `ScalingConfigurationInfo` (Serverless v1 only) is returned with empty values for
  every cluster; AWS omits it unless the cluster has a v1 scaling configuration.
"""

from __future__ import annotations

from typing import Any

from localstack.aws.api import RequestContext, ServiceRequest
from localstack.aws.skeleton import DispatchTable, Skeleton
from localstack.aws.spec import load_service
from localstack.services.moto import dispatch_to_moto
from localstack.services.plugins import Service
from moto.rds.models import DBCluster

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
