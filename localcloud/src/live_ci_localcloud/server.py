"""LocalStack's gateway served by Twisted, bound to the address GATEWAY_LISTEN names.

Why Twisted and not Hypercorn: LocalStack answers every request served by Hypercorn
with `Connection: close` (a work-around for h11 and boto, `set_close_connection_header`),
so each AWS call of a task or Lambda is a new TCP connection, and Hypercorn's asyncio
and h11 cost more per request besides: measured here, about 4.5 ms of LocalStack CPU per
request against 3.0 ms with Twisted. LocalStack is one Python process (one GIL) serving
every hop of the pipeline, so that CPU is latency for every unit.

Why not LocalStack's own `twisted` server: it listens on 0.0.0.0 whatever host
GATEWAY_LISTEN names (a TODO in `TwistedRuntimeServer.register`), which would expose
the local cloud's fake credentials-accepting endpoint on every interface. This one
listens on the host named. Selected with GATEWAY_SERVER=live-ci-twisted.
"""

from __future__ import annotations

import functools
from typing import Any

from localstack.runtime.server.core import RuntimeServer, RuntimeServerPlugin

NAME = "live-ci-twisted"


def cache_content_type_parsing() -> None:
    """Twisted parses every request's Content-Type with the `email` package's header
    parser (`twisted.web.http._parseContentType`): a quarter of LocalStack's GIL time
    under the pipeline's load, for a handful of distinct header values. The function
    maps bytes to bytes, so its results are memoised. Idempotent."""
    from twisted.web import http

    parse = http._parseContentType
    if getattr(parse, "live_ci_cached", False):
        return
    cached = functools.lru_cache(maxsize=256)(parse)
    cached.live_ci_cached = True  # type: ignore[attr-defined]
    http._parseContentType = cached


def loopback_twisted_server() -> RuntimeServer:
    from localstack import config
    from localstack.runtime.server.twisted import TwistedRuntimeServer
    from rolo.serving.twisted import TwistedGateway
    from twisted.internet import endpoints, reactor

    cache_content_type_parsing()

    class LoopbackTwistedRuntimeServer(TwistedRuntimeServer):
        def register(self, gateway: Any, listen: list[config.HostAndPort], ssl_creds: Any = None) -> None:
            # The local cloud serves plain HTTP only (its endpoint is http://127.0.0.1:port):
            # LocalStack's TLS multiplexing on the same port is not needed here.
            site = TwistedGateway(gateway)
            for host_and_port in listen:
                if config.is_ipv6_address(host_and_port.host):
                    endpoint = endpoints.TCP6ServerEndpoint(reactor, host_and_port.port, interface=host_and_port.host)
                else:
                    endpoint = endpoints.TCP4ServerEndpoint(reactor, host_and_port.port, interface=host_and_port.host)
                endpoint.listen(site)

    return LoopbackTwistedRuntimeServer()


class LoopbackTwistedServerPlugin(RuntimeServerPlugin):
    name = NAME

    def load(self, *args: Any, **kwargs: Any) -> RuntimeServer:
        return loopback_twisted_server()
