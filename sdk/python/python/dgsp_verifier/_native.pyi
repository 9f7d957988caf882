"""Type stubs of the native half of dgsp_verifier (use the package, not this module)."""

from typing import List, Optional, Tuple

class NativeError(Exception):
    """args: (kind, what, detail, message); turned into a DgspError subclass."""

class TrustRoot:
    @staticmethod
    def from_key_bytes(key: bytes) -> TrustRoot: ...
    @staticmethod
    def from_key_file(contents: bytes) -> TrustRoot: ...
    @staticmethod
    def from_key_file_pinned(contents: bytes, fingerprint: str) -> TrustRoot: ...
    @property
    def fingerprint(self) -> str: ...
    @property
    def params(self) -> str: ...
    def verify_signature(self, message: bytes, signature: bytes) -> Tuple[str, str]: ...
    def check_answer(
        self,
        message: bytes,
        signature: bytes,
        answer: bytes,
        snapshot: Optional[bytes],
        max_age_ms: int,
        now_unix_ms: int,
        min_snapshot: Optional[int] = None,
        clock_tolerance_ms: Optional[int] = None,
    ) -> Tuple[bool, str, bool, List[Tuple[str, bool, str]]]: ...
    def judge(
        self, message: bytes, signature: bytes, id: int, pi: bytes
    ) -> Tuple[bool, bool, bool, str, Optional[str]]: ...
    def verify_checkpoint(
        self, note: str
    ) -> Tuple[str, int, str, Optional[int], Optional[int]]: ...
    def verify_snapshot(self, snapshot: bytes) -> Tuple[str, int, int, int, str, str, int]: ...
