"""LocalStack service provider plugins (entry-point group `localstack.aws.provider`).

LocalStack core ships no ECS, SES v2, RDS or RDS Data provider; the first three are
served from the moto backends it bundles, the Data API from the local PostgreSQL. Imports are deferred: plux loads this module at start-up to
list plugins, and the services themselves load on first use.
"""

from localstack.services.plugins import Service, aws_provider


@aws_provider(api="ecs", name="default")
def ecs() -> Service:
    from live_ci_localcloud.ecs import create_service

    return create_service()


@aws_provider(api="sesv2", name="default")
def sesv2() -> Service:
    from live_ci_localcloud.sesv2 import create_service

    return create_service()


@aws_provider(api="rds", name="default")
def rds() -> Service:
    from live_ci_localcloud.rds import create_service

    return create_service()


@aws_provider(api="rds-data", name="default")
def rds_data() -> Service:
    from live_ci_localcloud.rds_data import create_service

    return create_service()
