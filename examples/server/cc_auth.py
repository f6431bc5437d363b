"""Per-user tokens of the reference server (docs/WIRE.md, "Per-user tokens").

Standard library only. A token is ``v1.<payload>.<sig>``:

* ``payload``: base64url without padding of the compact JSON ``{"sub": USER, "exp": SECONDS}``
  (``exp`` an integer, unix seconds);
* ``sig``: base64url without padding of HMAC-SHA256(secret, the ASCII bytes of
  ``"v1." + payload``).

This format is the reference server's own: the library treats a token as an opaque string.

When the server has a secret (``--secret``, ``POST /_admin/secret``), every sync, events and
stream request must carry ``Authorization: Bearer <token>`` whose ``sub`` is the request's
user: the sync's ``user_id``, every event's ``user_id`` (a batch that mixes users is refused),
the stream's ``user_id`` query parameter. A refusal is ``401`` with
``WWW-Authenticate: Bearer error="invalid_token", error_description="<reason>"`` and the body
``{"error": "invalid_token", "reason": "<reason>"}``, the reason one of ``missing``,
``malformed``, ``signature``, ``expired``, ``user``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import threading
import time
from collections import deque
from typing import Any

from cc_common import Json, Response, HttpError, is_number, json_response, parse_json, require_object

PREFIX = "v1"
REASONS = ("missing", "malformed", "signature", "expired", "user")
DEFAULT_TTL_SECONDS = 3600
MAX_TOKEN_BYTES = 8 * 1024
MAX_REJECTIONS_KEPT = 10_000
_B64URL = re.compile(r"[A-Za-z0-9_-]*")


# --------------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------------

def b64url(data: bytes) -> str:
    """base64url without padding (RFC 4648, section 5)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """The bytes of unpadded base64url; raises ValueError for anything else."""
    if not _B64URL.fullmatch(text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None


def _key(secret: str | bytes) -> bytes:
    return secret.encode("utf-8") if isinstance(secret, str) else secret


def _signature(secret: str | bytes, signed: str) -> str:
    return b64url(hmac.new(_key(secret), signed.encode("ascii"), hashlib.sha256).digest())


def mint_token(secret: str | bytes, user: str, exp: int) -> str:
    """A token for ``user`` that expires at ``exp`` (unix seconds)."""
    claims = json.dumps({"sub": user, "exp": int(exp)}, separators=(",", ":"), ensure_ascii=False)
    payload = b64url(claims.encode("utf-8"))
    return f"{PREFIX}.{payload}.{_signature(secret, f'{PREFIX}.{payload}')}"


def decode_token(secret: str | bytes, token: str | None, now: float) -> tuple[str | None, str | None]:
    """(the token's user, None) when it is well formed, signed with ``secret`` and not expired
    at ``now``; else (the user when it could be read, the reason it is refused)."""
    if token is None:
        return None, "missing"
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != PREFIX or not parts[1] or not parts[2]:
        return None, "malformed"
    try:
        claims = json.loads(b64url_decode(parts[1]).decode("utf-8"))
        b64url_decode(parts[2])
    except (ValueError, UnicodeDecodeError):
        return None, "malformed"
    if (not isinstance(claims, dict) or not isinstance(claims.get("sub"), str)
            or not isinstance(claims.get("exp"), int) or isinstance(claims.get("exp"), bool)):
        return None, "malformed"
    user: str = claims["sub"]
    expected = _signature(secret, f"{PREFIX}.{parts[1]}")
    if not hmac.compare_digest(expected.encode("ascii"), parts[2].encode("ascii")):
        return user, "signature"
    if claims["exp"] <= now:
        return user, "expired"
    return user, None


def verify_token(secret: str | bytes, token: str | None, user: str, now: float) -> str | None:
    """None when ``token`` is valid for ``user`` at ``now``; else the reason it is refused:
    ``missing`` (None), ``malformed``, ``signature`` (not signed with ``secret``), ``expired``
    (``exp <= now``) or ``user`` (its ``sub`` is another user)."""
    sub, reason = decode_token(secret, token, now)
    if reason is not None:
        return reason
    return None if hmac.compare_digest(_key(sub or ""), _key(user)) else "user"


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None without the header, and
    ``""`` (malformed) for another scheme, an empty token or one longer than 8 KiB."""
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_BYTES:
        return ""
    return token


def refusal(reason: str) -> Response:
    """The 401 that refuses a token."""
    header = f'Bearer error="invalid_token", error_description="{reason}"'
    return json_response(401, {"error": "invalid_token", "reason": reason},
                         {"WWW-Authenticate": header})


# --------------------------------------------------------------------------------------------
# The server's side: the secret, the checks and their counters
# --------------------------------------------------------------------------------------------

class TokenCheck:
    """The current secret (None: no checks) and what the checks decided since the last reset.

    A client request is checked in two steps: ``admit`` before its body is read (the header, the
    signature, the expiry), then ``match`` once its users are known. Both return None or the 401
    to answer, and count the request as accepted or rejected.
    """

    def __init__(self, secret: str | None) -> None:
        self.lock = threading.Lock()
        self.secret = secret
        self.accepted = 0
        self.rejected: deque[dict[str, Json]] = deque(maxlen=MAX_REJECTIONS_KEPT)

    @property
    def enabled(self) -> bool:
        return self.secret is not None

    def admit(self, path: str, header: str | None, user_id: str | None = None,
              now: float | None = None) -> tuple[str | None, Response | None]:
        """(the token's user, None) to go on, or (None, the 401). Without a secret: (None, None)."""
        secret = self.secret
        if secret is None:
            return None, None
        sub, reason = decode_token(secret, bearer_token(header), time.time() if now is None else now)
        if reason is not None:
            return None, self._reject(path, reason, user_id, sub)
        return sub, None

    def match(self, path: str, sub: str | None, users: list[str]) -> Response | None:
        """After ``admit``: the 401 when the request is for any user other than ``sub``."""
        if self.secret is None or sub is None:
            return None
        for user in users:
            if not hmac.compare_digest(user.encode("utf-8"), sub.encode("utf-8")):
                return self._reject(path, "user", user, sub)
        with self.lock:
            self.accepted += 1
        return None

    def _reject(self, path: str, reason: str, user_id: str | None, sub: str | None) -> Response:
        with self.lock:
            self.rejected.append({"path": path, "reason": reason, "user_id": user_id, "sub": sub})
        return refusal(reason)

    def report(self) -> Json:
        with self.lock:
            return {"enabled": self.secret is not None, "accepted": self.accepted,
                    "rejected": [dict(r) for r in self.rejected]}

    def clear(self) -> None:
        """Forgets the counters (not the secret)."""
        with self.lock:
            self.accepted = 0
            self.rejected.clear()


def log_fields(header: str | None) -> dict[str, Json]:
    """What the request log keeps of an Authorization header: whether there was one, and the
    user its token names (read without checking it); never the token."""
    token = bearer_token(header)
    sub = None
    if token:
        try:
            claims = json.loads(b64url_decode(token.split(".")[1]).decode("utf-8"))
            sub = claims.get("sub") if isinstance(claims, dict) else None
        except (ValueError, UnicodeDecodeError, IndexError):
            sub = None
    return {"authorization_present": header is not None,
            "token_sub": sub if isinstance(sub, str) else None}


# --------------------------------------------------------------------------------------------
# Admin endpoints: handler(request handler, raw body) -> Response
# --------------------------------------------------------------------------------------------

def _tokens(handler: Any) -> TokenCheck:
    return handler.server.tokens


def admin_set_secret(handler: Any, raw: bytes) -> Response:
    """``POST /_admin/secret {"secret": S}``; ``{"secret": null}`` turns the checks off."""
    doc = require_object(parse_json(raw), "body")
    if "secret" not in doc:
        raise HttpError(400, "'secret' is required (a non-empty string, or null)")
    secret = doc["secret"]
    if secret is not None and (not isinstance(secret, str) or not secret):
        raise HttpError(400, "'secret' must be a non-empty string or null")
    _tokens(handler).secret = secret
    return json_response(200, {"enabled": secret is not None})


def admin_mint_token(handler: Any, raw: bytes) -> Response:
    """``POST /_admin/token {"user_id": U, "ttl": SECONDS}`` -> ``{"token": T, "exp": E}``."""
    doc = require_object(parse_json(raw), "body")
    user_id = doc.get("user_id")
    if not isinstance(user_id, str):
        raise HttpError(400, "'user_id' must be a string")
    ttl = doc.get("ttl", DEFAULT_TTL_SECONDS)
    if not is_number(ttl):
        raise HttpError(400, "'ttl' must be a number of seconds (negative: already expired)")
    secret = _tokens(handler).secret
    if secret is None:
        raise HttpError(409, "no secret: start with --secret or POST /_admin/secret first")
    exp = int(time.time() + ttl)
    return json_response(200, {"token": mint_token(secret, user_id, exp), "exp": exp})


def admin_auth(handler: Any, raw: bytes) -> Response:
    """``GET /_admin/auth`` -> ``{"enabled", "accepted": N, "rejected": [...]}``."""
    return json_response(200, _tokens(handler).report())


ADMIN_ROUTES = {
    ("POST", "/_admin/secret"): admin_set_secret,
    ("POST", "/_admin/token"): admin_mint_token,
    ("GET", "/_admin/auth"): admin_auth,
}
