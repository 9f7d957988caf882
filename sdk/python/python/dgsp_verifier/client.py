"""The only network code of this package: an optional convenience that asks a gateway.

:func:`verify_with_gateway` POSTs the signature to a gateway's ``/v1/verify``, fetches the
signed snapshot the answer's checkpoint names from the same gateway, and then checks both
offline with :meth:`TrustRoot.check_answer`, exactly as if you had fetched them yourself.
The gateway is not trusted: its answer is evidence checked under your trust root, and a
lying or stale gateway gives a report with ``valid`` False. Only the standard library
(``urllib``) is used; nothing else in the package touches the network. Answers are read
with a cap (:data:`MAX_ANSWER_BYTES`, ``max_answer_bytes=``): a larger one is refused with
:class:`GatewayError` as soon as its ``Content-Length`` or its bytes pass the cap, never
read whole into memory.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any, Dict, Optional, Tuple

from . import DEFAULT_CLOCK_TOLERANCE_MS, AnswerReport, BytesLike, DgspError, TrustRoot, _bytes

__all__ = ["verify_with_gateway", "fetch_answer", "GatewayError", "MAX_ANSWER_BYTES"]

#: The most bytes read of a gateway's answer: a verify answer carries one signed checkpoint
#: note (under 70 KB with the largest signature), a revocation proof and a snapshot record,
#: and a snapshot is smaller still, so 8 MiB leaves ample room.
MAX_ANSWER_BYTES = 8 << 20

#: The most bytes read of an error answer's body (a problem document is a few hundred).
MAX_ERROR_BYTES = 64 << 10


class GatewayError(DgspError):
    """The gateway could not be asked, or did not answer with a verify answer or a snapshot
    (HTTP error, refused connection, not JSON). A gateway that answers, however wrongly, is
    not an error: its answer is checked and the report says what failed.

    Attributes:
        status: the HTTP status, or None when there was no HTTP answer.
        body: the answer's body (e.g. a problem+json document), when there was one.
    """

    kind = "gateway"

    def __init__(self, message: str, *, status: Optional[int] = None, body: bytes = b"") -> None:
        super().__init__(message, what="gateway")
        self.status = status
        self.body = body


def _signature_bytes(signature: BytesLike) -> bytes:
    """The signature's encoding: base64 text (as signature files hold) is decoded; a raw
    encoding (never pure ASCII: its header starts with 0xd6) is kept."""
    raw = _bytes(signature, "signature")
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        return raw
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        return raw


def _read_capped(resp: Any, url: str, limit: int) -> bytes:
    """The answer's body, or GatewayError as soon as it is known to be longer than ``limit``
    bytes: by its Content-Length, before reading, or once ``limit + 1`` bytes have arrived."""
    status = getattr(resp, "status", None)
    length = resp.headers.get("Content-Length")
    if length is not None and length.strip().isdigit() and int(length) > limit:
        raise GatewayError(
            f"{url}: the answer is {int(length)} bytes, more than the {limit} this client reads;"
            " refused without reading it",
            status=status,
        )
    body: bytes = resp.read(limit + 1)
    if len(body) > limit:
        raise GatewayError(
            f"{url}: the answer is larger than the {limit} bytes this client reads;"
            " refused without reading the rest",
            status=status,
        )
    return body


def _request(url: str, data: Optional[bytes], timeout: float, max_answer_bytes: int = MAX_ANSWER_BYTES) -> bytes:
    headers = {"Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (caller's URL)
            return _read_capped(resp, url, max_answer_bytes)
    except urllib.error.HTTPError as e:
        body = e.read(MAX_ERROR_BYTES)
        detail = ""
        try:
            problem = json.loads(body)
            detail = f": {problem.get('title', '')}: {problem.get('detail', '')}"
        except ValueError:
            pass
        raise GatewayError(f"{url} answered HTTP {e.code}{detail}", status=e.code, body=body) from None
    except (urllib.error.URLError, OSError) as e:
        raise GatewayError(f"{url}: {e}") from None


def fetch_answer(
    gateway_url: str,
    message: BytesLike,
    signature: BytesLike,
    *,
    timeout: float = 10.0,
    max_answer_bytes: int = MAX_ANSWER_BYTES,
) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]]]:
    """Asks ``gateway_url`` (e.g. ``http://127.0.0.1:8081``) to verify the signature and
    fetches the snapshot its answer's checkpoint names: returns ``(answer, snapshot)`` as
    decoded JSON (``snapshot`` None when the answer names none). Nothing is checked here.
    Each answer is read up to ``max_answer_bytes``.

    Raises:
        GatewayError: the gateway could not be asked, did not answer with JSON, or answered
            more than ``max_answer_bytes``.
    """
    base = gateway_url.rstrip("/")
    body = json.dumps(
        {
            "message": base64.b64encode(_bytes(message, "message")).decode("ascii"),
            "signature": base64.b64encode(_signature_bytes(signature)).decode("ascii"),
        }
    ).encode("utf-8")
    try:
        answer = json.loads(_request(f"{base}/v1/verify", body, timeout, max_answer_bytes))
    except ValueError as e:
        raise GatewayError(f"{base}/v1/verify: not JSON: {e}") from None
    checkpoint = ((answer.get("freshness") or {}).get("checkpoint") or {}) if isinstance(answer, dict) else {}
    number = checkpoint.get("snapshot_number")
    if not isinstance(number, int):
        return answer, None
    try:
        url = f"{base}/v1/revocations/snapshots/{number}"
        snapshot = json.loads(_request(url, None, timeout, max_answer_bytes))
    except ValueError as e:
        raise GatewayError(f"{base}/v1/revocations/snapshots/{number}: not JSON: {e}") from None
    return answer, snapshot


def verify_with_gateway(
    root: TrustRoot,
    gateway_url: str,
    message: BytesLike,
    signature: BytesLike,
    *,
    max_age_s: Optional[float] = None,
    max_age_ms: Optional[int] = None,
    now_unix_ms: Optional[int] = None,
    min_snapshot: Optional[int] = None,
    clock_tolerance_ms: int = DEFAULT_CLOCK_TOLERANCE_MS,
    timeout: float = 10.0,
    max_answer_bytes: int = MAX_ANSWER_BYTES,
) -> AnswerReport:
    """Network convenience: asks a gateway about ``signature`` on ``message`` (``POST
    {gateway_url}/v1/verify``), fetches the signed snapshot its checkpoint names (``GET
    {gateway_url}/v1/revocations/snapshots/{n}``), and checks both offline under ``root``
    with :meth:`TrustRoot.check_answer` (same policy arguments; give ``max_age_s`` or
    ``max_age_ms``). The gateway is not trusted: ``report.valid`` is computed here.

    Raises:
        GatewayError: the gateway could not be asked (connection, HTTP error such as 422
            for a body that is not a signature, an answer that is not JSON, or one larger
            than ``max_answer_bytes``).
        MalformedInput: the signature or the answer cannot be read.
    """
    answer, snapshot = fetch_answer(
        gateway_url, message, signature, timeout=timeout, max_answer_bytes=max_answer_bytes
    )
    return root.check_answer(
        message,
        signature,
        answer,
        snapshot,
        max_age_s=max_age_s,
        max_age_ms=max_age_ms,
        now_unix_ms=now_unix_ms,
        min_snapshot=min_snapshot,
        clock_tolerance_ms=clock_tolerance_ms,
    )
