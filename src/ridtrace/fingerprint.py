"""Short content fingerprints for the log contract (docs/log-schema.md, Fingerprints).

Kept free of heavy imports: the frontend, the workers and the forensics CLI all use it,
and the two sides' values must compare byte for byte.
"""

from __future__ import annotations

from hashlib import blake2b

__all__ = ["fingerprint"]


def fingerprint(text: str) -> str:
    """16 hex digits of BLAKE2b (8-byte digest) over the UTF-8 bytes of ``text``."""
    # surrogatepass: a lone surrogate smuggled in through JSON must not crash the caller.
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
