"""Rosters: the catalog profiles a member represents (an artists' manager, a label, a publisher).

A member keeps any number of named rosters (`MAX_ROSTERS`, app/services/rosters.py), each a set of
catalog profiles. A roster is what a workspace key reaches (app/models/api_key.py: `roster_id`) and
what the hosted widget can show as a grid (`data-credits-roster`). A profile is on a roster while
its `roster_profiles` row exists: the key door asks that row on every request, so taking a profile
off the roster takes it out of the key's reach at once."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.core.extensions import Model
from app.models.base import UTCDateTime, new_uuid, utcnow


class Roster(Model):
    __tablename__ = "rosters"
    # One name per member: the account page and the widget snippet tell rosters apart by it.
    __table_args__ = (UniqueConstraint("owner_id", "name", name="uq_rosters_owner_name"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(120))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RosterProfile(Model):
    """A profile on a roster. The primary key (roster, profile) is the key door's reach check."""

    __tablename__ = "roster_profiles"

    roster_id: Mapped[str] = mapped_column(ForeignKey("rosters.id", ondelete="CASCADE"), primary_key=True)
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"), primary_key=True, index=True)
    added_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
