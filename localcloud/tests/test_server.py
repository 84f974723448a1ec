"""The gateway server (live_ci_localcloud.server): the running cloud is served by Twisted,
keeps a client's connection for its next request (Hypercorn's LocalStack answered each
with `Connection: close`), and listens on the loopback address only."""

from __future__ import annotations

import http.client
import socket

import pytest
from urllib.parse import urlparse


def listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on `port` (IPv4 and IPv6)."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            address, state = fields[1], fields[3]
            host_hex, port_hex = address.rsplit(":", 1)
            if state != "0A" or int(port_hex, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(host_hex)
            # /proc prints each 32-bit word in host (little-endian) order.
            words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            family = socket.AF_INET if len(words) == 4 else socket.AF_INET6
            found.add(socket.inet_ntop(family, words))
    return found


def test_the_cloud_listens_on_loopback_only(endpoint: str) -> None:
    port = urlparse(endpoint).port
    assert port is not None
    assert listening_addresses(port) == {"127.0.0.1"}


def test_the_cloud_is_served_by_twisted_and_keeps_the_connection(endpoint: str) -> None:
    url = urlparse(endpoint)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        connection.request("GET", "/_localstack/health")
        first = connection.getresponse()
        first.read()
        sock = connection.sock
        connection.request("GET", "/_localstack/health")
        second = connection.getresponse()
        second.read()
        assert first.status == second.status == 200
        assert first.getheader("Server", "").startswith("TwistedWeb"), first.getheaders()
        assert (first.getheader("Connection") or "").lower() != "close", first.getheaders()
        assert sock is not None and connection.sock is sock, "the second request needed a new connection"
    finally:
        connection.close()


def test_a_content_type_is_parsed_once_and_still_parsed_right(monkeypatch: pytest.MonkeyPatch) -> None:
    from twisted.web import http

    from live_ci_localcloud import server

    parsed: list[str] = []
    real = http.EmailMessage

    class Counting(real):  # type: ignore[misc, valid-type]
        def __setitem__(self, name: str, value: str) -> None:
            parsed.append(value)
            super().__setitem__(name, value)

    monkeypatch.setattr(http, "EmailMessage", Counting)
    monkeypatch.setattr(http, "_parseContentType", http._parseContentType)
    server.cache_content_type_parsing()
    server.cache_content_type_parsing()  # idempotent: not cached twice over

    for _ in range(3):
        assert http._parseContentType(b"application/x-amz-json-1.0; charset=utf-8") == b"application/x-amz-json-1.0"
        assert http._parseContentType(b"Application/JSON") == b"application/json"
    assert parsed == ["application/x-amz-json-1.0; charset=utf-8", "Application/JSON"]
