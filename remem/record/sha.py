"""SHA-256 as the hook can afford it. Stdlib only."""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from typing import Any


def _sha256_constructor() -> Any:
    # The interpreter's own SHA-256 module loads in microseconds; hashlib loads OpenSSL, which
    # costs the hook about 3 ms. Its name changed in Python 3.12.
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found]
        except ImportError:
            from hashlib import sha256
    return sha256


_sha256: Any = None  # found on first use: a failed import is not retried per call


def sha256_hex(data: bytes) -> str:
    global _sha256
    if _sha256 is None:
        _sha256 = _sha256_constructor()
    return str(_sha256(data).hexdigest())
