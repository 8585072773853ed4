"""The refresh-rotation grace window (off unless REFRESH_GRACE_SECONDS > 0).

Rotation makes every refresh token single-use, and a second use revokes the whole grant family
(someone holds a copy). A client on a flaky network, though, may send a refresh, lose the answer
and retry: within the window that retry gets the *same* response instead of a revocation.

Only hashes of tokens are stored, so the response cannot be rebuilt; it is sealed at rotation
time with AES-256-GCM under a key derived (HKDF-SHA256) from the refresh token being rotated out.
Only someone who presents that refresh token can open it - a copy of the database cannot.
A replay is refused once the window has passed, when the family was revoked, or when the new
refresh token has itself been used (the client evidently received it: the retry is not a retry).
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from flask import current_app

from app.models.base import utcnow
from app.store import store, tokens

HKDF_INFO = b"credits-id refresh-replay v1"
NONCE_BYTES = 12


def window_seconds() -> int:
    return int(current_app.config.get("REFRESH_GRACE_SECONDS", 0))


def _key(presented_refresh_token: str) -> bytes:
    # The refresh token is 256 random bits, so HKDF without a salt is a sound KDF here.
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=HKDF_INFO).derive(
        presented_refresh_token.encode("utf-8")
    )


def _associated_data(token_id: int) -> bytes:
    # Binds the ciphertext to its row: it cannot be moved to another token's row.
    return f"refresh_replays:{token_id}".encode()


def seal(old: tokens.RotatedRefresh, successor_id: int, presented_refresh_token: str, response: dict[str, Any]) -> None:
    """Keep `response` (the rotation's answer, stored as token row `successor_id`) openable by
    `presented_refresh_token` only. In the caller's transaction: it commits with the rotation."""
    seconds = window_seconds()
    if seconds <= 0:
        return
    nonce = os.urandom(NONCE_BYTES)
    plaintext = json.dumps(response, separators=(",", ":")).encode()
    ciphertext = AESGCM(_key(presented_refresh_token)).encrypt(nonce, plaintext, _associated_data(old.id))
    # Rows older than the longest window can never be replayed: the store purges them meanwhile.
    store().tokens.seal_answer(old.id, successor_id, nonce + ciphertext, purge_before=utcnow() - timedelta(seconds=60))


def replay(old: tokens.StoredToken, presented_refresh_token: str) -> dict[str, Any] | None:
    """The response the rotation of `old` produced, if the retry is within the window and the
    family is intact and its member and app in good standing; None otherwise (the caller then
    treats it as reuse)."""
    seconds = window_seconds()
    if seconds <= 0 or old.refresh_used_at is None or old.revoked_at is not None or old.is_barred():
        return None
    if utcnow() - old.refresh_used_at > timedelta(seconds=seconds):
        return None
    answer = store().tokens.sealed_answer(old.id)
    if answer is None:
        return None
    successor_id, sealed = answer
    successor = store().tokens.find(successor_id)
    if successor is None or successor.revoked_at is not None or successor.refresh_used_at is not None:
        return None
    try:
        plaintext = AESGCM(_key(presented_refresh_token)).decrypt(
            sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], _associated_data(old.id)
        )
    except (InvalidTag, ValueError):
        return None
    return json.loads(plaintext)
