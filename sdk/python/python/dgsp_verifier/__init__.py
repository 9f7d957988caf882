"""Check DGSP group signatures, and the answers of a DGSP gateway, offline.

Trust comes only from the :class:`TrustRoot` you construct: the group's public key (its
file or bytes), optionally pinned to a fingerprint obtained out of band. Nothing in this
module does I/O: you fetch what you want checked (a gateway's ``POST /v1/verify`` answer,
the signed snapshot its checkpoint names) and hand it over; every check is computed here,
by the Rust crate ``dgsp-verifier``.

Example::

    root = TrustRoot.from_key_file(open("group.pub", "rb").read())
    root.verify_signature(message, signature)          # SignatureInfo, or raises
    report = root.check_answer(message, signature, answer, snapshot, max_age_s=300)
    if not report.valid:
        print(report.first_failure)

With a witness policy (a C2SP tlog-policy naming the group's log key, the witnesses and the
quorum), answers must also carry a checkpoint cosigned by a quorum of those witnesses, each
cosignature no older than the maximum age::

    root = TrustRoot.from_key_file(key, witness_policy=open("policy").read(),
                                   log_key_statement=statement)   # GET /v1/log/key

A negative verdict is a report (``valid`` is False and every check says why), never an
exception. Exceptions (all :class:`DgspError`) are for inputs that cannot be read at all,
and for :meth:`TrustRoot.verify_signature` on a signature that does not verify.

The only network code is the optional :func:`verify_with_gateway` in
:mod:`dgsp_verifier.client`, which fetches an answer and a snapshot with the standard
library and then checks them offline like everything else.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Tuple, Union

from . import _native

__all__ = [
    "DEFAULT_CLOCK_TOLERANCE_MS",
    "TrustRoot",
    "SignatureInfo",
    "Check",
    "AnswerReport",
    "JudgeReport",
    "CheckpointInfo",
    "SnapshotInfo",
    "DgspError",
    "TrustRootError",
    "MalformedInput",
    "InvalidSignature",
    "BadSignedObject",
    "CHECK_NAMES",
    "verify_with_gateway",
]

__version__ = "0.1.0"

#: The names of the checks :meth:`TrustRoot.check_answer` makes, in the order it makes them
#: (``witnessed_checkpoint`` and ``witness_quorum`` only when the root has a witness policy,
#: ``min_snapshot`` only when a minimum is given). Their meaning is documented in
#: ``sdk/rust/src/evidence.rs``.
CHECK_NAMES: Tuple[str, ...] = (
    "gateway_status",
    "signature",
    "checkpoint_signature",
    "checkpoint_age",
    "future_checkpoint",
    "witnessed_checkpoint",
    "witness_quorum",
    "snapshot_signature",
    "snapshot_named",
    "revocation_proof",
    "min_snapshot",
)

#: How far (ms) a checkpoint's signed time may be ahead of ``now_unix_ms`` by default in
#: :meth:`TrustRoot.check_answer`; further ahead fails the check ``future_checkpoint``.
DEFAULT_CLOCK_TOLERANCE_MS: int = 5000

# Bytes, text (UTF-8 encoded) or, for JSON inputs, an already decoded object.
BytesLike = Union[bytes, bytearray, memoryview, str]
JsonInput = Union[bytes, bytearray, memoryview, str, Mapping[str, Any]]


# ---- exceptions ----------------------------------------------------------------------


class DgspError(Exception):
    """Base class of every error this package raises: a check could not be made at all.

    Attributes:
        kind: ``"trust_root"``, ``"malformed"``, ``"signature"`` or ``"bad_signed_object"``
            (the error kinds of the shared conformance vectors).
        what: which input (``"signature"``, ``"answer"``, ``"snapshot"``, ``"pi"``,
            ``"checkpoint"``, ...).
        detail: what is wrong, in words.
    """

    kind: str = "dgsp"

    def __init__(self, message: str, *, what: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.what = what
        self.detail = detail or message


class TrustRootError(DgspError):
    """The trust root is not a group public key, or not the pinned fingerprint's, or its
    witness policy does not hold (does not parse, has no log line for the group, or names
    another log key than the group's log-key statement)."""

    kind = "trust_root"


class MalformedInput(DgspError):
    """An input is not what it should be (not a signature encoding, not a gateway answer,
    not a signed snapshot, ...). :attr:`what` names the input."""

    kind = "malformed"


class InvalidSignature(DgspError):
    """The signature does not verify under the group key (or belongs to another group)."""

    kind = "signature"


class BadSignedObject(DgspError):
    """A signed checkpoint note, snapshot or log-key statement does not verify under the
    group key. :attr:`what` is ``"checkpoint"``, ``"snapshot"`` or ``"log-key statement"``."""

    kind = "bad_signed_object"


_ERRORS = {
    cls.kind: cls for cls in (TrustRootError, MalformedInput, InvalidSignature, BadSignedObject)
}


def _raise(e: _native.NativeError) -> "DgspError":
    kind, what, detail, message = e.args
    return _ERRORS.get(kind, DgspError)(message, what=what, detail=detail)


# ---- reports -------------------------------------------------------------------------


@dataclass(frozen=True)
class SignatureInfo:
    """What a verified signature shows.

    Attributes:
        params: the group's parameter set (``sha2-128f``, ``slh-dsa-sha2-128f``, ...).
        zeta: the certificate serial number the signature carries (hex): what a revocation
            proof is about.
    """

    params: str
    zeta: str


@dataclass(frozen=True)
class Check:
    """One check of a gateway answer and its outcome.

    Attributes:
        check: its stable name (one of :data:`CHECK_NAMES`).
        passed: whether it held.
        detail: what was found, in words.
    """

    check: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class AnswerReport:
    """The outcome of :meth:`TrustRoot.check_answer`.

    Attributes:
        valid: True exactly when every check held: the signature is valid and its
            certificate is proven not revoked in the snapshot a fresh signed checkpoint
            names.
        gateway_status: the gateway's own status word (``ok``, ``revoked``,
            ``invalid_signature``, ``stale``, ...): its word, not evidence.
        gateway_valid: whether the gateway said valid.
        checks: every check, in the order made.
        witnesses_checked: whether the checkpoint's witnesses were checked
            (``witnessed_checkpoint``, ``witness_quorum``): only when the root has a
            witness policy. When False, nothing excludes a checkpoint the group key signed
            for this caller alone (a split view).
    """

    valid: bool
    gateway_status: str
    gateway_valid: bool
    checks: Tuple[Check, ...]
    witnesses_checked: bool = False

    @property
    def first_failure(self) -> Optional[Check]:
        """The first check that failed, or None."""
        return next((c for c in self.checks if not c.passed), None)

    @property
    def failed_checks(self) -> Tuple[str, ...]:
        """The names of the checks that failed, in order."""
        return tuple(c.check for c in self.checks if not c.passed)

    def __bool__(self) -> bool:
        return self.valid


@dataclass(frozen=True)
class JudgeReport:
    """The verdict on an opening (the same fields as a gateway's ``POST /v1/judge``).

    Attributes:
        correct: the signature verifies and ``(id, pi)`` is its correct opening.
        signature_valid: whether the signature itself verifies (revocation aside).
        opening_matches: whether ``(id, pi)`` matches the signature.
        params: the group's parameter set.
        detail: why it is not correct, in words (None when correct).
    """

    correct: bool
    signature_valid: bool
    opening_matches: bool
    params: str
    detail: Optional[str]


@dataclass(frozen=True)
class CheckpointInfo:
    """A verified checkpoint note.

    Attributes:
        origin: the log it is a checkpoint of (``dgsp/<fingerprint prefix>``).
        size: log entries it covers.
        head: the log head hash (hex).
        time_unix_ms: the registry's signed time, when the note carries one.
        snapshot_number: the revocation snapshot it names, when it names one.
    """

    origin: str
    size: int
    head: str
    time_unix_ms: Optional[int]
    snapshot_number: Optional[int]


@dataclass(frozen=True)
class SnapshotInfo:
    """A verified signed revocation snapshot's record.

    Attributes:
        group: the group fingerprint it is of (hex).
        number: snapshot number, from 1.
        log_seq: the last event-log entry it includes.
        count: number of revoked certificates (zetas).
        root: root of the revoked set (hex).
        prev_hash: hash of the previous record (hex; zeros for number 1).
        time_unix_ms: publication time.
    """

    group: str
    number: int
    log_seq: int
    count: int
    root: str
    prev_hash: str
    time_unix_ms: int


# ---- input conversion ----------------------------------------------------------------


def _bytes(value: BytesLike, name: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{name}: expected bytes or str, not {type(value).__name__}")


def _text(value: BytesLike, name: str) -> str:
    if isinstance(value, str):
        return value
    try:
        return _bytes(value, name).decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedInput(f"{name}: not UTF-8 text", what=name, detail="not UTF-8 text") from None


def _json(value: JsonInput, name: str) -> bytes:
    if isinstance(value, Mapping):
        return json.dumps(value).encode("utf-8")
    return _bytes(value, name)


# ---- the trust root ------------------------------------------------------------------


class TrustRoot:
    """The group a caller trusts: its manager public key and, optionally, a witness policy
    (see :meth:`with_witness_policy`). Everything is checked under them; nothing else is
    trusted, and nothing is fetched.

    Build one with :meth:`from_key_file`, :meth:`from_key_bytes` or :meth:`pinned` (each
    takes ``witness_policy`` and ``log_key_statement``). Instances are immutable and safe
    to share between threads; the checks release the interpreter while they run.
    """

    __slots__ = ("_root", "_witness_policy")

    def __init__(
        self, _native_root: "_native.TrustRoot", _witness_policy: Optional[str] = None
    ) -> None:
        """Internal: use :meth:`from_key_file`, :meth:`from_key_bytes` or :meth:`pinned`."""
        if not isinstance(_native_root, _native.TrustRoot):
            raise TypeError(
                "use TrustRoot.from_key_file, TrustRoot.from_key_bytes or TrustRoot.pinned"
            )
        self._root = _native_root
        self._witness_policy = _witness_policy

    @classmethod
    def _build(
        cls,
        make: "Callable[[], _native.TrustRoot]",
        witness_policy: Optional[BytesLike],
        log_key_statement: Optional[BytesLike],
    ) -> "TrustRoot":
        try:
            root = cls(make())
        except _native.NativeError as e:
            raise _raise(e) from None
        if witness_policy is None:
            if log_key_statement is not None:
                raise ValueError("a log-key statement is only used with a witness policy")
            return root
        return root.with_witness_policy(witness_policy, log_key_statement)

    @classmethod
    def from_key_bytes(
        cls,
        key: bytes,
        *,
        witness_policy: Optional[BytesLike] = None,
        log_key_statement: Optional[BytesLike] = None,
    ) -> "TrustRoot":
        """The root from the group public key's binary encoding (with a witness policy:
        see :meth:`with_witness_policy`).

        Raises:
            TrustRootError: ``key`` is not a group public key, or the policy does not hold.
        """
        return cls._build(
            lambda: _native.TrustRoot.from_key_bytes(_bytes(key, "key")),
            witness_policy,
            log_key_statement,
        )

    @classmethod
    def from_key_file(
        cls,
        contents: BytesLike,
        *,
        witness_policy: Optional[BytesLike] = None,
        log_key_statement: Optional[BytesLike] = None,
    ) -> "TrustRoot":
        """The root from a group key file's contents: the key's standard base64 on its
        first non-blank line (as ``dgsp-registry public-key`` prints it and ``GET
        /v1/group`` serves it as ``public_key``), or the raw encoding (with a witness
        policy: see :meth:`with_witness_policy`).

        Raises:
            TrustRootError: the contents are not a group public key, or the policy does
                not hold.
        """
        return cls._build(
            lambda: _native.TrustRoot.from_key_file(_bytes(contents, "key file")),
            witness_policy,
            log_key_statement,
        )

    @classmethod
    def pinned(
        cls,
        contents: BytesLike,
        fingerprint: str,
        *,
        witness_policy: Optional[BytesLike] = None,
        log_key_statement: Optional[BytesLike] = None,
    ) -> "TrustRoot":
        """The root from a key file whose key must have ``fingerprint`` (64 hex characters:
        the SHA3-256 of the key's encoding, obtained out of band, e.g. from the operator;
        with a witness policy: see :meth:`with_witness_policy`).

        Raises:
            TrustRootError: not a group key, or not the one with that fingerprint, or the
                policy does not hold.
        """
        return cls._build(
            lambda: _native.TrustRoot.from_key_file_pinned(
                _bytes(contents, "key file"), fingerprint
            ),
            witness_policy,
            log_key_statement,
        )

    def with_witness_policy(
        self, policy: BytesLike, log_key_statement: Optional[BytesLike] = None
    ) -> "TrustRoot":
        """This root with a witness policy: :meth:`check_answer` then also requires the
        answer's witnessed checkpoint (``freshness.checkpoint.witnessed``), signed by the
        policy's log key for the same tree as the group-signed checkpoint and cosigned by a
        quorum of the policy's witnesses, each cosignature no older than the maximum age
        (checks ``witnessed_checkpoint`` and ``witness_quorum``).

        Args:
            policy: a C2SP tlog-policy text (``log``, ``witness``, ``group``, ``quorum``
                lines); it must have a ``log`` line for this group's origin.
            log_key_statement: the group key's statement naming its log key (as the
                registry serves it at ``GET /v1/log/key``); when given, it must verify under
                the group key and name the policy's log key, so a caller holding only the
                group key knows that log key is the group's.

        Raises:
            TrustRootError: the policy does not parse (the message names the line), has no
                log line for this group, or its log key is not the statement's.
            BadSignedObject: the statement does not verify under the group key
                (``what == "log-key statement"``).
        """
        text = _text(policy, "witness policy")
        statement = None if log_key_statement is None else _text(log_key_statement, "log-key statement")
        try:
            return TrustRoot(self._root.with_witness_policy(text, statement), text)
        except _native.NativeError as e:
            raise _raise(e) from None

    def log_line_from_statement(self, log_key_statement: BytesLike) -> str:
        """The policy ``log`` line (``log <vkey>\\n``) of the group's log key, from the
        group key's log-key statement, verified under the group key: the start of a
        witness policy for a caller who holds only the group key.

        Raises:
            BadSignedObject: the statement does not verify under the group key.
        """
        try:
            return self._root.log_line_from_statement(
                _text(log_key_statement, "log-key statement")
            )
        except _native.NativeError as e:
            raise _raise(e) from None

    @property
    def witness_policy(self) -> Optional[str]:
        """The witness policy's text, or None."""
        return self._witness_policy

    @property
    def fingerprint(self) -> str:
        """The group's fingerprint (hex SHA3-256 of the key's encoding)."""
        return self._root.fingerprint

    @property
    def params(self) -> str:
        """The group's parameter set name (``sha2-128f``, ``slh-dsa-sha2-128f``, ...)."""
        return self._root.params

    def verify_signature(self, message: BytesLike, signature: BytesLike) -> SignatureInfo:
        """Verifies ``signature`` on ``message`` under the group key, revocation aside (a
        signature alone cannot say whether its certificate was revoked; a gateway answer,
        checked with :meth:`check_answer`, proves that).

        ``signature`` is its binary encoding or the standard base64 of it (as ``dgsp-manager
        member sign`` writes signature files). A ``str`` message is UTF-8 encoded.

        Raises:
            MalformedInput: ``signature`` is not a signature encoding.
            InvalidSignature: it does not verify under this group's key.
        """
        try:
            params, zeta = self._root.verify_signature(
                _bytes(message, "message"), _bytes(signature, "signature")
            )
        except _native.NativeError as e:
            raise _raise(e) from None
        return SignatureInfo(params=params, zeta=zeta)

    def check_answer(
        self,
        message: BytesLike,
        signature: BytesLike,
        answer: JsonInput,
        snapshot: Optional[JsonInput],
        *,
        max_age_s: Optional[float] = None,
        max_age_ms: Optional[int] = None,
        now_unix_ms: Optional[int] = None,
        min_snapshot: Optional[int] = None,
        clock_tolerance_ms: int = DEFAULT_CLOCK_TOLERANCE_MS,
    ) -> AnswerReport:
        """Checks a gateway's ``POST /v1/verify`` answer for ``signature`` on ``message``,
        trusting nothing the gateway says that can be checked: the signature (computed
        here), the signed checkpoint note in the answer (group key, this group's log, signed
        time no older than the maximum age and not more than ``clock_tolerance_ms`` ahead of
        now), the signed snapshot that checkpoint names (its
        signature, and that the checkpoint names exactly it), the revocation proof against
        it for the zeta read from the signature itself, and optionally a minimum snapshot
        number.

        Args:
            message: the signed message (``str`` is UTF-8 encoded).
            signature: its encoding, or the standard base64 of it.
            answer: the gateway's JSON answer (bytes, text, or the decoded ``dict``).
            snapshot: the signed snapshot the answer's checkpoint names, as served at
                ``/v1/revocations/snapshots/{n}`` (``n`` is
                ``answer["freshness"]["checkpoint"]["snapshot_number"]``); bytes, text or
                ``dict``. With None, the snapshot and proof checks fail.
            max_age_s: oldest acceptable checkpoint, in seconds before now.
            max_age_ms: the same in milliseconds (give exactly one of the two).
            now_unix_ms: now, in Unix milliseconds (default: this machine's clock).
            min_snapshot: lowest acceptable snapshot number (e.g. the highest seen before).
            clock_tolerance_ms: how far the checkpoint's signed time may be ahead of now
                (skew between the registry's clock and this one; default 5000). A note
                further ahead fails ``future_checkpoint``: its age would be 0 however long
                the registry's clock ran ahead.

        Returns:
            An :class:`AnswerReport`; ``valid`` is True exactly when every check held.

        Raises:
            MalformedInput: the signature or the answer cannot be read at all.
            ValueError: neither or both of ``max_age_s`` and ``max_age_ms`` given, or a
                negative maximum age or tolerance.
        """
        if (max_age_s is None) == (max_age_ms is None):
            raise ValueError("give exactly one of max_age_s and max_age_ms")
        age_ms = int(max_age_ms) if max_age_ms is not None else int(float(max_age_s) * 1000)  # type: ignore[arg-type]
        if age_ms < 0:
            raise ValueError("the maximum age must not be negative")
        tolerance = int(clock_tolerance_ms)
        if tolerance < 0:
            raise ValueError("the clock tolerance must not be negative")
        now = int(time.time() * 1000) if now_unix_ms is None else int(now_unix_ms)
        try:
            valid, status, gateway_valid, checks, witnessed = self._root.check_answer(
                _bytes(message, "message"),
                _bytes(signature, "signature"),
                _json(answer, "answer"),
                None if snapshot is None else _json(snapshot, "snapshot"),
                age_ms,
                now,
                min_snapshot,
                tolerance,
            )
        except _native.NativeError as e:
            raise _raise(e) from None
        return AnswerReport(
            valid=valid,
            gateway_status=status,
            gateway_valid=gateway_valid,
            checks=tuple(Check(check=c, passed=p, detail=d) for c, p, d in checks),
            witnesses_checked=witnessed,
        )

    def judge(
        self, message: BytesLike, signature: BytesLike, id: int, pi: BytesLike
    ) -> JudgeReport:
        """Judges the manager's claim that member ``id`` made ``signature``, with the opening
        proof ``pi`` (its encoding, hex or standard base64). A wrong opening is a report
        with ``correct`` False.

        Raises:
            MalformedInput: ``signature`` or ``pi`` cannot be read.
        """
        try:
            correct, sig_valid, matches, params, detail = self._root.judge(
                _bytes(message, "message"), _bytes(signature, "signature"), id, _bytes(pi, "pi")
            )
        except _native.NativeError as e:
            raise _raise(e) from None
        return JudgeReport(
            correct=correct,
            signature_valid=sig_valid,
            opening_matches=matches,
            params=params,
            detail=detail,
        )

    def verify_checkpoint(self, note: Union[str, bytes]) -> CheckpointInfo:
        """Verifies a signed checkpoint note (as in an answer's
        ``freshness.checkpoint.note``, or ``GET /v1/checkpoint``) under the group key and
        checks that it is of this group's log.

        Raises:
            BadSignedObject: the note does not verify, or is of another log.
        """
        text = note.decode("utf-8") if isinstance(note, (bytes, bytearray)) else note
        try:
            origin, size, head, t, n = self._root.verify_checkpoint(text)
        except _native.NativeError as e:
            raise _raise(e) from None
        return CheckpointInfo(
            origin=origin, size=size, head=head, time_unix_ms=t, snapshot_number=n
        )

    def verify_snapshot(self, snapshot: JsonInput) -> SnapshotInfo:
        """Decodes a signed revocation snapshot in its JSON form (as served at
        ``/v1/revocations/snapshots/{n}``) and verifies its signature.

        Raises:
            MalformedInput: not a signed snapshot.
            BadSignedObject: its signature does not verify, or it is of another group.
        """
        try:
            fields = self._root.verify_snapshot(_json(snapshot, "snapshot"))
        except _native.NativeError as e:
            raise _raise(e) from None
        return SnapshotInfo(*fields)

    def __repr__(self) -> str:
        return f"TrustRoot(params={self.params!r}, fingerprint={self.fingerprint!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TrustRoot)
            and other.fingerprint == self.fingerprint
            and other._witness_policy == self._witness_policy
        )

    def __hash__(self) -> int:
        return hash((self.fingerprint, self._witness_policy))


from .client import verify_with_gateway  # noqa: E402  (network code, kept apart)
