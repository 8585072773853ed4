"""Members of the credits platform: who signs in, their membership and their stable ids."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import Boolean, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.core.email_address import lookup_form
from app.core.extensions import Model
from app.models.base import UTCDateTime, new_uuid, utcnow


class Tier(StrEnum):
    """Membership: `basic` reads own credits; `pro` also reads own analytics."""

    BASIC = "basic"
    PRO = "pro"


class Role(StrEnum):
    MEMBER = "member"
    DEVELOPER = "developer"
    ADMIN = "admin"


class User(Model):
    __tablename__ = "users"

    # The stable user id: published in the namespaced claim, never changes.
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    # The OIDC subject: opaque, unique, never reassigned (a separate value so that
    # pairwise subjects could be introduced later without touching the user id).
    sub: Mapped[str] = mapped_column(String(36), unique=True, default=new_uuid)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    # True only once the member followed a mailed link to this address (verification, invitation,
    # password reset); a new address is verified before it replaces the old one.
    email_verified: Mapped[bool] = mapped_column(Boolean, default=False)
    name: Mapped[str] = mapped_column(String(200))
    password_hash: Mapped[str] = mapped_column(String(255))
    tier: Mapped[str] = mapped_column(String(16), default=Tier.BASIC.value)
    role: Mapped[str] = mapped_column(String(16), default=Role.MEMBER.value)
    profile_id: Mapped[str | None] = mapped_column(
        String(36), ForeignKey("profiles.id", ondelete="SET NULL"), nullable=True
    )
    # Set while an admin has suspended the member: sign-in refused, sessions ended, tokens revoked.
    suspended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    @property
    def is_pro(self) -> bool:
        return self.tier == Tier.PRO

    @property
    def is_suspended(self) -> bool:
        return self.suspended_at is not None

    @property
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN

    @property
    def holds_api_keys(self) -> bool:
        """Whether the role may hold API keys (developers and admins); their keys pause otherwise."""
        return self.role in (Role.DEVELOPER, Role.ADMIN)

    @staticmethod
    def normalize_email(email: str) -> str:
        """The form addresses are stored and compared in (app/core/email_address.py)."""
        return lookup_form(email)

    def __repr__(self) -> str:
        return f"<User {self.id}>"
