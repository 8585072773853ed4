"""The refresh-rotation grace window's memory: the response a rotation produced, sealed.

When a client on a flaky network retries a refresh whose answer it never received, the
provider answers with the very same response instead of treating the retry as reuse. The
response cannot be rebuilt from the database (only hashes are stored), so it is kept here,
encrypted with a key derived from the refresh token that was presented: a copy of the database
alone cannot read it. Rows are useless once REFRESH_GRACE_SECONDS has passed and are purged.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, LargeBinary
from sqlalchemy.orm import Mapped, mapped_column

from app.core.extensions import Model
from app.models.base import UTCDateTime, utcnow


class RefreshReplay(Model):
    __tablename__ = "refresh_replays"

    # The rotated-out token row (its refresh token is the one a retry presents).
    token_id: Mapped[int] = mapped_column(ForeignKey("tokens.id", ondelete="CASCADE"), primary_key=True)
    # The row the rotation created: a replay is refused once it was used or revoked.
    successor_id: Mapped[int] = mapped_column(ForeignKey("tokens.id", ondelete="CASCADE"), index=True)
    # AES-256-GCM: 12-byte nonce followed by the ciphertext of the JSON token response.
    sealed: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
