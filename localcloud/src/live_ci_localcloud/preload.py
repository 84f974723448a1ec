"""Imports the moto backends and provider modules of this plugin once, while
LocalStack starts (one thread), instead of lazily on the first requests.

LocalStack loads a provider on its first request. Terraform sends ECS, EC2 and
RDS calls in parallel, so two gateway threads could import `moto.ec2` through
different modules at once; Python's per-module import locks then deadlocked
(`deadlock detected by _ModuleLock('moto.ec2.exceptions')`), and every later ECS
call failed with a 500 while the apply waited forever. Importing here first
leaves nothing for those threads to race on.
"""

from __future__ import annotations

import logging

from localstack.runtime import hooks

LOG = logging.getLogger(__name__)


@hooks.on_infra_start()
def preload_moto_backends() -> None:
    import moto.ec2.models  # noqa: F401
    import moto.ecs.models  # noqa: F401
    import moto.rds.models  # noqa: F401
    import moto.ses.models  # noqa: F401
    import moto.sesv2.models  # noqa: F401

    import live_ci_localcloud.providers  # noqa: F401

    LOG.info("live-ci: moto backends preloaded")
