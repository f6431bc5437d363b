"""What the reference server's modules share: errors, JSON helpers and responses.

Standard library only. ``cc_server.py`` and the modules beside it (``cc_transfer.py``,
``cc_auth.py``, ``cc_stream.py``) import it; it imports none of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SYNC_PATH = "/content_cards/sync"
EVENTS_PATH = "/events"
MAX_BODY_BYTES = 16 * 1024 * 1024

Json = Any



class HttpError(Exception):
    """An error answered to the client as ``{"error": message}`` with the given status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# --------------------------------------------------------------------------------------------
# Small JSON helpers
# --------------------------------------------------------------------------------------------

def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(raw: bytes) -> Json:
    """Decode a request body; raises ``HttpError(400)`` with a message saying what is wrong."""
    if not raw:
        raise HttpError(400, "empty body: expected JSON")
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise HttpError(400, f"body is not valid UTF-8: {exc}") from None
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise HttpError(400, f"invalid JSON: {exc}") from None


def dump_json(value: Json) -> bytes:
    """Compact JSON, as a server would send it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def is_number(value: Any) -> bool:
    """True for int and float, false for bool (which Python counts as an int)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def require_object(value: Json, what: str) -> dict[str, Json]:
    if not isinstance(value, dict):
        raise HttpError(400, f"{what} must be a JSON object")
    return value


def require_string(obj: dict[str, Json], key: str, *, default: str | None = None) -> str:
    value = obj.get(key, default)
    if not isinstance(value, str):
        raise HttpError(400, f"'{key}' must be a string")
    return value



# --------------------------------------------------------------------------------------------
# Responses
# --------------------------------------------------------------------------------------------

@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def json_response(status: int, value: Json, headers: dict[str, str] | None = None) -> Response:
    return Response(status, dump_json(value), headers=headers or {})


def error_response(status: int, message: str) -> Response:
    return json_response(status, {"error": message})


def error_message(response: Response) -> str | None:
    """The ``error`` of an error response, for the request log."""
    if response.status < 400:
        return None
    try:
        value = json.loads(response.body)
    except ValueError:
        return None
    return value.get("error") if isinstance(value, dict) else None
