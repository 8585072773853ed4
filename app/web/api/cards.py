"""Profile cards: the summary the hosted widget shows of a profile (static/widget/widget.js).

A card is a profile's name, place and avatar, its number of credits, its most credited roles, its
newest credits and its best chart positions, with the address of its page on the platform. A batch
of up to `MAX_CARDS` profiles costs at most six queries whatever its size (profiles, credit counts,
role counts, newest credits, their roles, chart rows); the newest credits of each profile are picked
from the (profile, release date, id) index with a LIMIT each, so a prolific profile costs no more
rows than a new one there. The role counts do read every credit of the batch's profiles: the top
roles are a profile's whole career, not its last few releases."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from flask import current_app
from sqlalchemy import func, select, union_all

from app.core.extensions import db
from app.models import Album, ChartRow, Credit, CreditRole, Profile, Track, credit_role_links
from app.web.api.auth import canonical_uuid
from app.web.api.reads import NEWEST_FIRST, roles_of

MAX_CARDS = 24  # profiles per request: a roster grid's worth, never a bulk export
TOP_ROLES = 3
RECENT_CREDITS = 3
CHART_POSITIONS = 3


def wanted_ids(raw: str) -> list[str] | None:
    """The distinct profile ids of a comma-separated list, in order, or None when there are none
    or more than MAX_CARDS. An id that is not a UUID names no profile: it is kept, and finds none."""
    ids: list[str] = []
    for part in raw.split(","):
        value = part.strip()
        value = canonical_uuid(value) or value
        if value and value not in ids:
            ids.append(value)
    return ids if 0 < len(ids) <= MAX_CARDS else None


def profile_page(profile_id: str) -> str:
    """The profile's page on the platform (`PROFILE_PAGE_URL`), or the platform's own address."""
    template = current_app.config.get("PROFILE_PAGE_URL") or ""
    return template.replace("{id}", profile_id) if template else current_app.config["ISSUER_URL"] + "/"


def cards(profile_ids: list[str]) -> list[dict[str, Any]]:
    """The cards of the profiles among `profile_ids` that exist, in the order asked."""
    wanted = [pid for pid in profile_ids if canonical_uuid(pid) == pid]
    if not wanted:
        return []
    profiles = {p.id: p for p in db.session.scalars(select(Profile).where(Profile.id.in_(wanted)))}
    found = [pid for pid in wanted if pid in profiles]
    if not found:
        return []
    counts = dict(
        db.session.execute(
            select(Credit.profile_id, func.count()).where(Credit.profile_id.in_(found)).group_by(Credit.profile_id)
        ).all()
    )
    top_roles = _top_roles(found)
    recent = _recent_credits(found)
    charts = _chart_positions(found)
    return [
        {
            "id": pid,
            "name": profiles[pid].name,
            "city": profiles[pid].city,
            "country": profiles[pid].country,
            "avatarUrl": profiles[pid].avatar_url,
            "url": profile_page(pid),
            "creditCount": counts.get(pid, 0),
            "topRoles": top_roles.get(pid, []),
            "recentCredits": recent.get(pid, []),
            "charts": charts.get(pid, []),
        }
        for pid in found
    ]


def _top_roles(profile_ids: list[str]) -> dict[str, list[str]]:
    """Each profile's most credited specific roles. Counted by role id (from the credits' covering
    index and the links' primary key), named after; ties by name, compared here rather than by
    the database's collation (which orders "Co-Producer" and "Composer" differently on each store)."""
    held = (
        select(Credit.profile_id, credit_role_links.c.role_id, func.count().label("credits"))
        .join(credit_role_links, credit_role_links.c.credit_id == Credit.id)
        .where(Credit.profile_id.in_(profile_ids))
        .group_by(Credit.profile_id, credit_role_links.c.role_id)
        .subquery()
    )
    rows = db.session.execute(
        select(held.c.profile_id, CreditRole.name, held.c.credits).join(CreditRole, CreditRole.id == held.c.role_id)
    )
    counted: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for profile_id, role, count in rows:
        counted[profile_id][role] += count  # a family and its namesake role ("Producer") are one name
    return {
        profile_id: sorted(roles, key=lambda role: (-roles[role], role))[:TOP_ROLES]
        for profile_id, roles in counted.items()
    }


def _recent_credits(profile_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each profile's newest credits (as its credit pages order them), with the roles held."""
    newest = [
        select(Credit.id, Credit.profile_id, Credit.release_date, Track.title, Album.title.label("album"))
        .join(Track, Track.id == Credit.track_id)
        .join(Album, Album.id == Credit.album_id)
        .where(Credit.profile_id == profile_id)
        .order_by(*NEWEST_FIRST)
        .limit(RECENT_CREDITS)
        .subquery()
        for profile_id in profile_ids
    ]
    # Each member wrapped as a subquery: SQLite allows no LIMIT on a compound select's members.
    rows = db.session.execute(union_all(*(select(*sub.c) for sub in newest))).all()
    roles = roles_of([row[0] for row in rows])
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for credit_id, profile_id, released, title, album in sorted(rows, key=lambda row: (row[2], row[0]), reverse=True):
        found[profile_id].append(
            {
                "title": title,
                "album": album,
                "releaseDate": released.isoformat(),
                "roles": [role["child"] for role in roles.get(credit_id, [])],
            }
        )
    return found


def _chart_positions(profile_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each profile's best chart positions (ties by chart name)."""
    rows = db.session.execute(
        select(ChartRow.profile_id, ChartRow.position, ChartRow.chart_name).where(ChartRow.profile_id.in_(profile_ids))
    )
    ranked: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for profile_id, position, chart in rows:
        ranked[profile_id].append((position, chart))
    return {
        profile_id: [{"chartName": chart, "position": position} for position, chart in sorted(held)[:CHART_POSITIONS]]
        for profile_id, held in ranked.items()
    }
