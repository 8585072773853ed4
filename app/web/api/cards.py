"""Profile cards: the summary the hosted widget shows of a profile (static/widget/widget.js).

A card is a profile's name, place and avatar, its number of credits, its most credited roles, its
newest credits and its best chart positions, with the address of its page on the platform. The
rows are the store's (`store().catalog_reads.card_rows`, app/store/catalog_reads.py): a batch of up
to `MAX_CARDS` profiles costs at most six queries whatever its size. What is here is the batch's
rules (which ids, how many), the ranking of roles and chart positions, and the card's shape."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from flask import current_app

from app.store import store
from app.store.catalog_reads import ChartPosition, RecentCredit, RoleCount
from app.web.api.auth import canonical_uuid

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
    rows = store().catalog_reads.card_rows(wanted, RECENT_CREDITS)
    found = [pid for pid in wanted if pid in rows.profiles]
    if not found:
        return []
    top_roles = _top_roles(rows.role_counts)
    recent = _recent_credits(rows.recent)
    charts = _chart_positions(rows.charts)
    return [
        {
            "id": pid,
            "name": rows.profiles[pid].name,
            "city": rows.profiles[pid].city,
            "country": rows.profiles[pid].country,
            "avatarUrl": rows.profiles[pid].avatar_url,
            "url": profile_page(pid),
            "creditCount": rows.credit_counts.get(pid, 0),
            "topRoles": top_roles.get(pid, []),
            "recentCredits": recent.get(pid, []),
            "charts": charts.get(pid, []),
        }
        for pid in found
    ]


def _top_roles(role_counts: list[RoleCount]) -> dict[str, list[str]]:
    """Each profile's most credited specific roles; ties by name, compared here rather than by the
    database's collation (which orders "Co-Producer" and "Composer" differently on each store)."""
    counted: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for held in role_counts:
        counted[held.profile_id][held.role] += held.credits  # a family and its namesake role ("Producer") are one name
    return {
        profile_id: sorted(roles, key=lambda role: (-roles[role], role))[:TOP_ROLES]
        for profile_id, roles in counted.items()
    }


def _recent_credits(newest: list[RecentCredit]) -> dict[str, list[dict[str, Any]]]:
    """Each profile's newest credits (as its credit pages order them), with the roles held."""
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for credit in newest:
        found[credit.profile_id].append(
            {
                "title": credit.title,
                "album": credit.album,
                "releaseDate": credit.release_date.isoformat(),
                "roles": list(credit.roles),
            }
        )
    return found


def _chart_positions(positions: list[ChartPosition]) -> dict[str, list[dict[str, Any]]]:
    """Each profile's best chart positions (ties by chart name)."""
    ranked: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for row in positions:
        ranked[row.profile_id].append((row.position, row.chart_name))
    return {
        profile_id: [{"chartName": chart, "position": position} for position, chart in sorted(held)[:CHART_POSITIONS]]
        for profile_id, held in ranked.items()
    }
