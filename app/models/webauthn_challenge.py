"""The WebAuthn challenges waiting for a browser's answer: a passkey being added, the second step
with a passkey, a sign-in with a passkey alone.

A challenge lives here, not in the browser's cookie (where an old copy of the cookie would offer it
again): the browser's session keeps only a random handle, and the row holds the SHA-256 of that
handle and of the challenge, which ceremony it is and for which member. The answer deletes the row
and reads it in one statement (DELETE ... RETURNING), whatever the answer's outcome, so a challenge
is answered once: a replayed cookie, or one answer sent twice at once, finds nothing. A row lives
five minutes; `flask purge-expired` deletes the ones nobody answered."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.core.extensions import Model
from app.models.base import UTCDateTime


class WebauthnChallenge(Model):
    __tablename__ = "webauthn_challenges"

    id: Mapped[int] = mapped_column(primary_key=True)
    handle_hash: Mapped[str] = mapped_column(String(64), unique=True)  # SHA-256 of the handle in the session
    challenge_hash: Mapped[str] = mapped_column(String(64))  # SHA-256 of the challenge's bytes
    purpose: Mapped[str] = mapped_column(String(16))  # register | 2fa | signin
    # The member the ceremony is for: who adds the passkey, who typed the right password; none for a
    # sign-in with a passkey alone (the passkey names its member).
    user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=True, index=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
