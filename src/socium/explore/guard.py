"""Who may talk to the explorer: loopback hosts (and hosts the user names), from pages of those hosts.

Why: the explorer serves traces that hold personas (real users' bios in the OASIS data), prompts and
answers, on a port of the researcher's own machine. A page on the internet the researcher happens to
visit can reach that port two ways: by **DNS rebinding** (its own host name is made to resolve to
127.0.0.1, so the browser sends ``Host: evil.example:PORT`` and lets the page read the answer as
same-origin) and by a **cross-origin WebSocket** (browsers do not apply the same-origin policy to
WebSockets, so any page may open one to ``ws://127.0.0.1:PORT`` and drive a kernel). Jupyter's answer,
which this follows: accept only requests whose ``Host`` is a loopback name or address (or one the user
allowed), and refuse any request (HTTP or WebSocket) whose ``Origin`` names another host.

An ASGI middleware of its own (a few lines) rather than Starlette's ``TrustedHostMiddleware``: that one
checks the Host only, not the Origin of a WebSocket, and answers WebSockets with an HTTP response some
servers reject; one check for both keeps the rule in one place.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
WS_POLICY_VIOLATION = 1008
"""The WebSocket close code for a refused connection (RFC 6455, "policy violation")."""


def host_name(value: str) -> str:
    """The host part of a ``Host`` header or an origin's netloc, lower case, without port or brackets."""
    v = value.strip().lower()
    if v.startswith("["):  # [::1]:8765
        return v[1 : v.find("]")] if "]" in v else v
    if v.count(":") == 1:
        v = v.split(":", 1)[0]
    return v.rstrip(".")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, no port) is this machine: ``localhost`` or 127/8, ::1."""
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class HostGuard:
    """ASGI middleware: 403 (HTTP) or close 1008 (WebSocket) unless the Host is allowed and the Origin,
    when sent, names an allowed host too. ``allowed`` adds host names beyond loopback (lower case)."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = frozenset(host_name(h) for h in allowed if h.strip())

    def host_ok(self, host: str) -> bool:
        name = host_name(host)
        return bool(name) and (is_loopback(name) or name in self.allowed)

    def origin_ok(self, origin: str | None) -> bool:
        if origin is None:  # not a browser's cross-site request (curl, the page's own navigation)
            return True
        parts = urlsplit(origin.strip())
        return parts.scheme in ("http", "https") and self.host_ok(parts.netloc)

    def refusal(self, scope: Scope) -> str | None:
        """Why the request is refused (None: it is let through)."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host")
        if host is None or not self.host_ok(host):
            return f"host {host!r} is not this machine; start the explorer with --allow-host NAME to allow it"
        if not self.origin_ok(headers.get("origin")):
            return f"origin {headers.get('origin')!r} is another site"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        why = self.refusal(scope)
        if why is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": WS_POLICY_VIOLATION, "reason": why[:120]})
        else:
            body = f"refused: {why}\n".encode()
            headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 403, "headers": headers})
            await send({"type": "http.response.body", "body": body})
