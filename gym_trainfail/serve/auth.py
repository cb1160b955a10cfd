"""Bearer-token guard for every HTTP request and WebSocket handshake of ``trainfail serve``.

A pure ASGI middleware: it answers before the application sees the request, so no route
(anything added later included) is reachable without the token. The token is compared in
constant time (:func:`hmac.compare_digest`). Every HTTP response, refusals and answers alike,
carries ``Connection: close``: an HTTP connection serves one request (the routes are small
informational GETs), so no idle keep-alive connection holds a descriptor.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Shortest token the server accepts (a generated one is 43 characters).
MIN_TOKEN_CHARS = 16
MAX_HEADER_CHARS = 1024


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def check_token(token: str) -> str:
    """``token`` if it is usable as a bearer token, else a ``ValueError`` saying why."""
    token = token.strip()
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"the token must be at least {MIN_TOKEN_CHARS} characters")
    if not token.isascii() or not token.isprintable() or " " in token:
        raise ValueError("the token must be printable ASCII without spaces")
    return token


class BearerAuth:
    """Refuse every request whose ``Authorization`` header is not exactly ``Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {check_token(token)}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            send = _closing(send)
        if scope["type"] not in ("http", "websocket") or self.authorized(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            # Closing before accepting refuses the handshake (HTTP 403).
            await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong bearer token"})
            return
        body = json.dumps({"detail": "missing or wrong bearer token"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def authorized(self, scope: Scope) -> bool:
        """Exactly one ``Authorization`` header, equal to the expected one (constant-time compare)."""
        values = [v for k, v in scope.get("headers", ()) if k.lower() == b"authorization"]
        if len(values) != 1 or len(values[0]) > MAX_HEADER_CHARS:
            return False
        return hmac.compare_digest(bytes(values[0]), self._expected)


def _closing(send: Send) -> Send:
    """``send`` with ``Connection: close`` on the response (one request per HTTP connection)."""

    async def send_closing(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", ()) if bytes(k).lower() != b"connection"]
            message = {**message, "headers": [*headers, (b"connection", b"close")]}
        await send(message)

    return send_closing
