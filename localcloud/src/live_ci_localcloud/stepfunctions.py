"""Caches for LocalStack's Step Functions interpreter, installed at start-up, so the
local cloud's own cost per state stops dominating the pipeline benchmark.

Profiled with py-spy during `make bench-pipeline` (20 units, max_parallel 4), LocalStack
spent, per task state and before the service call was even made:
- ~8 s of CPU per run building JSONPath parsers: `jsonpath_ng.parse` generates its
  LALR tables with ply on every call, and LocalStack parses every `.$` parameter,
  InputPath/ResultPath and Choice variable on every evaluation. In the single Python
  process (one GIL) that CPU delays every other request the cloud serves.
- ~100 ms per task state waiting for an `sts:AssumeRole` of the state machine's role
  (`boto_client_for` → `connect_to.with_assumed_role`) through LocalStack's own
  gateway, then building a new botocore client.
- ~70 ms of CPU per execution parsing the whole definition with ANTLR before its first
  state (`ExecutionWorker._get_evaluation_entrypoint`).

None of the caches changes what an execution computes: a parsed JSONPath expression is
an immutable tree (its `find` reads the data it is given); a parsed definition's
`Program` keeps its state in the `Environment` each evaluation gets, which is how
LocalStack itself runs one `Program` in many threads for a Map state's iterations; and
an assumed-role client is keyed by everything that chose it (service, region, role)
and rebuilt after a while, well within the assumed credentials' one-hour life.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from localstack.runtime import hooks

LOG = logging.getLogger(__name__)

# Distinct JSONPath strings in a deployment are few (the state machine's text); the
# bound only guards against a pathological definition.
PARSE_CACHE_SIZE = 4096
# Definitions: one per state machine version in use.
PROGRAM_CACHE_SIZE = 64
# Assumed-role credentials live an hour; a client is rebuilt well before that.
CLIENT_TTL_SECONDS = 600.0

_PARSE_MODULES = (
    "localstack.services.stepfunctions.asl.utils.json_path",
    "localstack.services.stepfunctions.asl.component.common.path.result_path",
)
_BOTO_CLIENT_MODULE = "localstack.services.stepfunctions.asl.utils.boto_client"
_ASL_PACKAGE = "localstack.services.stepfunctions.asl"
_ASL_PARSER_MODULE = "localstack.services.stepfunctions.asl.parse.asl_parser"
_installed = False


def cached_parser(parse: Callable[[str], Any], size: int = PARSE_CACHE_SIZE) -> Callable[[str], Any]:
    """`parse` memoised by the text it parses."""
    cached = functools.lru_cache(maxsize=size)(parse)
    functools.update_wrapper(cached, parse)
    return cached


class ClientCache:
    """Assumed-role clients by (service, region, role), each kept for `ttl` seconds."""

    def __init__(
        self, make: Callable[..., Any], ttl: float = CLIENT_TTL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.make = make
        self.ttl = ttl
        self.clock = clock
        self.lock = threading.Lock()
        self.clients: dict[tuple[str, str, str | None], tuple[float, Any]] = {}
        # One maker per key: a run's first executions start together, and each
        # would otherwise assume the role and build the same client at once.
        self.making: dict[tuple[str, str, str | None], threading.Lock] = {}

    def _fresh(self, key: tuple[str, str, str | None]) -> Any:
        with self.lock:
            hit = self.clients.get(key)
            if hit is not None and self.clock() - hit[0] < self.ttl:
                return hit[1]
            return None

    def __call__(self, service: str, region: str, state_credentials: Any) -> Any:
        key = (service, region, getattr(state_credentials, "role_arn", None))
        client = self._fresh(key)
        if client is not None:
            return client
        with self.lock:
            making = self.making.setdefault(key, threading.Lock())
        # Made outside the cache's lock: an AssumeRole is a request to this same process.
        with making:
            client = self._fresh(key)
            if client is None:
                now = self.clock()
                client = self.make(service=service, region=region, state_credentials=state_credentials)
                with self.lock:
                    self.clients[key] = (now, client)
        return client


def install() -> None:
    """Replaces the interpreter's JSONPath `parse` and `boto_client_for` with cached ones
    in every module that imported them (they are bound by name at import, so the whole
    interpreter is imported first)."""
    global _installed
    if _installed:
        return
    import importlib
    import pkgutil

    for name in _PARSE_MODULES:
        module = importlib.import_module(name)
        module.parse = cached_parser(module.parse)  # type: ignore[attr-defined]
    # The definition parser, memoised by text, on its class: every execution's
    # entrypoint (`ExecutionWorker._get_evaluation_entrypoint`) and CreateStateMachine's
    # validation (its static analysers walk the parse tree, read only) call it there,
    # so a run's first executions find the definition parsed at creation.
    parser = importlib.import_module(_ASL_PARSER_MODULE).AmazonStateLanguageParser
    parser.parse = staticmethod(cached_parser(parser.parse, PROGRAM_CACHE_SIZE))
    boto_client = importlib.import_module(_BOTO_CLIENT_MODULE)
    original = boto_client.boto_client_for
    cache = ClientCache(original)
    asl = importlib.import_module(_ASL_PACKAGE)
    for info in pkgutil.walk_packages(asl.__path__, prefix=f"{_ASL_PACKAGE}."):
        try:
            importlib.import_module(info.name)
        except Exception as e:  # noqa: BLE001 - an unloadable module cannot call the client either
            LOG.debug("live-ci: not importing %s: %s", info.name, e)
    replaced = []
    for name, module in list(sys.modules.items()):
        if name.startswith(_ASL_PACKAGE) and getattr(module, "boto_client_for", None) is original:
            module.boto_client_for = cache  # type: ignore[attr-defined]
            replaced.append(name)
    _installed = True
    LOG.info(
        "live-ci: step functions caches installed (jsonpath parsers, definitions; clients in %d modules)", len(replaced)
    )


@hooks.on_infra_start()
def cache_parsers_and_clients() -> None:
    install()
