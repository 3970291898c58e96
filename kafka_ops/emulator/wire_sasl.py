"""SASL/PLAIN: the handshake, authentication and the token check (RFC 4616)."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

import kafka.errors as Errors
from kafka.protocol.sasl import (
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
)

from kafka_ops.emulator.wire_context import (
    NONE,
    RequestContext,
)


def check_plain_token(token: bytes, users: Mapping[str, str]) -> bool:
    """RFC 4616 PLAIN: authzid NUL authcid NUL passwd; authzid must be empty or the user."""
    parts = bytes(token).split(b"\0")
    if len(parts) != 3:
        return False
    authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
    if authzid and authzid != user:
        return False
    expected = users.get(user)
    return expected is not None and hmac.compare_digest(expected.encode(), password.encode())




# -- SASL ----------------------------------------------------------------------------------
def handle_sasl_handshake(ctx: RequestContext, request: Any) -> Any:
    if request.mechanism != "PLAIN":
        return SaslHandshakeResponse(error_code=Errors.UnsupportedSaslMechanismError.errno,
                                     mechanisms=["PLAIN"])
    ctx.connection.mechanism = "PLAIN"
    ctx.connection.raw_sasl_next = ctx.version == 0
    return SaslHandshakeResponse(error_code=NONE, mechanisms=["PLAIN"])


def handle_sasl_authenticate(ctx: RequestContext, request: Any) -> Any:
    conn = ctx.connection
    if conn.mechanism != "PLAIN":
        conn.close_after_reply = True
        return SaslAuthenticateResponse(
            error_code=Errors.IllegalSaslStateError.errno,
            error_message="SaslAuthenticate before a successful SaslHandshake",
            auth_bytes=b"", session_lifetime_ms=0)
    if check_plain_token(request.auth_bytes, ctx.sasl_users):
        conn.authenticated = True
        return SaslAuthenticateResponse(error_code=NONE, error_message=None, auth_bytes=b"",
                                        session_lifetime_ms=0)
    conn.close_after_reply = True  # Kafka closes the connection after a failed authentication
    return SaslAuthenticateResponse(
        error_code=Errors.SaslAuthenticationFailedError.errno,
        error_message="Authentication failed: Invalid username or password",
        auth_bytes=b"", session_lifetime_ms=0)
