"""A service the tests need is not reachable: which evidence says so, and the address tried.

Structured evidence first: the exception's type and the types it was raised
from (the runner's plugin records the chain, since libraries wrap the socket
error: requests' ConnectionError from urllib3's NewConnectionError from
ConnectionRefusedError), and the ``host:port`` found in the frames that tried
to connect. The messages are read only to name the address when the frames
did not hold it, and to recognise a database or cache client's connection
error whose type is generic (psycopg2's ``OperationalError`` is also "no such
table"). Message forms are those of the clients' own error texts as users
reported them (redis-py, psycopg2/psycopg, PyMySQL, pymongo, requests/urllib3,
aiohttp, httpx, botocore, kafka-python, grpc, docker-py).
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

# Raised only by a failed connection or name lookup (socket, or a client wrapping it).
CONNECTION_TYPES = frozenset(
    {
        "ConnectionRefusedError",
        "ConnectionResetError",
        "ConnectionAbortedError",
        "gaierror",
        "herror",
        "NewConnectionError",
        "NameResolutionError",
        "ConnectError",
        "ConnectTimeout",
        "ClientConnectorError",
        "ClientConnectorDNSError",
        "EndpointConnectionError",
        "ServerSelectionTimeoutError",
        "AutoReconnect",
        "NoBrokersAvailable",
        "AMQPConnectionError",
        "ConnectionClosedError",
        "CannotConnectNowError",
    }
)
# Generic types that mean "could not connect" only when the message says so.
_GENERIC = frozenset(
    {
        "OperationalError",
        "ConnectionError",
        "InterfaceError",
        "OSError",
        "URLError",
        "DockerException",
        "_InactiveRpcError",
        "RpcError",
        "MaxRetryError",
        "Exception",
        "RuntimeError",
        "TimeoutError",
        "DatabaseError",
        "ClientError",
        "WebDriverException",
        "ServiceUnavailable",
        "TransportError",
    }
)
_UNREACHABLE_TEXT = re.compile(
    r"Connection refused|Connection reset by peer|ECONNREFUSED|Connect call failed|could not "
    r"connect to server|"
    r"connection to server at .{0,80} failed|Can't connect to (?:local )?MySQL server|Failed to "
    r"establish a new "
    r"connection|Cannot connect to host|Error \d+ connecting to|Could not connect to the endpoint "
    r"URL|failed to "
    r"connect to all addresses|No route to host|Network is unreachable|Connection timed out|Error "
    r"while fetching "
    r"server API version|NoBrokersAvailable|No servers found yet|Is the server running|Cannot "
    r"assign requested "
    r"address|ERR_CONNECTION_REFUSED|ERR_NAME_NOT_RESOLVED|[Cc]ould(?: not|n't) connect to|"
    + r"|".join(
        (
            "Name or service not known",
            "Temporary failure in name resolution",
            "nodename nor servname provided",
            "getaddrinfo failed",
            "No address associated with hostname",
            "could not translate host name",
            "Failed to resolve",
            "Name does not resolve",
        )
    )
)
_DNS_TEXT = re.compile(
    r"Name or service not known|Temporary failure in name resolution|nodename nor servname|"
    r"getaddrinfo failed|No address associated with hostname|could not translate host name|"
    r"Failed to resolve|Name does not resolve|gaierror"
)
# Address forms in the clients' messages, most specific first: (pattern, has a port group).
_ADDRESSES = (
    # psycopg2 >= 2.9 / libpq 14
    re.compile(r"connection to server at \"([^\"]+)\" \([^)]*\), port (\d+)"),
    # libpq < 14: Is the server running on host ...
    re.compile(r"on host \"([^\"]+)\"[^?]*?port (\d+)"),
    # urllib3 pools: HTTPConnectionPool(host='x', port=8000)
    re.compile(r"host='([^']+)', port=(\d+)"),
    re.compile(r"Cannot connect to host ([\w.-]+):(\d+)"),  # aiohttp
    # asyncio / aiohttp: Connect call failed ('127.0.0.1', 6379)
    re.compile(r"\('([\w.:-]+)', (\d+)\)"),
    # redis-py: Error 111 connecting to localhost:6379.
    re.compile(r"connecting to ([\w.-]+):(\d+)"),
    re.compile(r"MySQL server on '([\w.-]+)(?::(\d+))?'"),  # PyMySQL / mysqlclient
    # pymongo: localhost:27017: [Errno 111] Connection refused
    re.compile(r"([\w.-]+):(\d+): \[Errno"),
    # grpc: ipv4:127.0.0.1:50051: Failed to connect
    re.compile(r"ipv[46]:(\[[^\]]+\]|[\d.]+):(\d+)"),
    re.compile(r"could not translate host name \"([^\"]+)\"()"),  # libpq, name lookup
    re.compile(r"endpoint URL: \"(\w+://[^\"/]+)"),  # botocore
    re.compile(
        r"\b(?:https?|postgres(?:ql)?|mysql|redis|rediss|amqp|mongodb|kafka)://(?:[^@\s/'\"]*@)?([^\s/'\"]+)()"
    ),
)


def _names(exc_type: Optional[str], causes: Tuple[str, ...]) -> Tuple[str, ...]:
    """The class names in the chain: the exception's, then each cause's (``module.Type:
    message``)."""
    names = [exc_type or ""]
    for cause in causes:
        head = cause.split(":", 1)[0].strip()
        names.append(head.rsplit(".", 1)[-1])
    return tuple(names)


def unreachable(exc_type: Optional[str], message: str, causes: Tuple[str, ...]) -> bool:
    """True when the exception (or one it was raised from) is a failed connection or name lookup.

    An assertion never counts: a test that checks a connection's outcome
    says what it expected, and that is the test's verdict, not an outage.
    """
    if exc_type in ("AssertionError", "Failed"):
        return False
    names = _names(exc_type, causes)
    if any(name in CONNECTION_TYPES for name in names):
        return True
    texts = (message, *causes)
    return any(name in _GENERIC for name in names) and any(
        _UNREACHABLE_TEXT.search(t) for t in texts
    )


def is_name_lookup(message: str, causes: Tuple[str, ...]) -> bool:
    """True when the failure is a host name that does not resolve (no network, or an unknown
    host)."""
    return any(_DNS_TEXT.search(text) for text in (message, *causes))


def address_tried(endpoint: str, message: str, causes: Tuple[str, ...]) -> str:
    """``host:port`` (or the host, or a URL's host) the connection tried; "" when nothing names
    it."""
    if endpoint:
        return endpoint
    for text in (message, *causes):
        for pattern in _ADDRESSES:
            match = pattern.search(text)
            if match:
                host, port = match.group(1), match.group(2) if pattern.groups > 1 else ""
                return f"{host}:{port}" if port else host
    return ""


def unreachable_hint(address: str, lookup: bool) -> str:
    """What to do about it, naming the address."""
    where = f" at {address}" if address else ""
    if lookup:
        host = address.rsplit(":", 1)[0] if address.count(":") == 1 else address
        return (
            f"the host name{' ' + host if host else ''} does not resolve (no network here, or a "
            f"host that only "
            "exists in another setup, such as a docker compose service name): run the tests where "
            "it resolves, or point their configuration at a reachable host"
        )
    return (
        f"the tests need a service{where} that is not running or not reachable: start it (a local "
        f"server, "
        "docker compose up) or point the tests' configuration at a running one; no code change "
        "fixes this"
    )
