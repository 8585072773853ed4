"""The member's live sessions as the account page lists them (browser, IP, last seen), and signing
one of them out. No Flask globals here; services only flush."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from app.models import User
from app.store import store

# Order matters: Edge and Opera also say "Chrome", Chrome also says "Safari".
BROWSERS = (
    ("Edg/", "Edge"),
    ("OPR/", "Opera"),
    ("Firefox/", "Firefox"),
    ("Chromium/", "Chromium"),
    ("Chrome/", "Chrome"),
    ("Safari/", "Safari"),
    ("curl/", "curl"),
)
SYSTEMS = (
    ("Android", "Android"),
    ("iPhone", "iPhone"),
    ("iPad", "iPad"),
    ("Windows", "Windows"),
    ("Mac OS X", "macOS"),
    ("CrOS", "ChromeOS"),
    ("Linux", "Linux"),
)


@dataclass(frozen=True)
class SessionLine:
    id: int
    browser: str  # "Firefox on Linux"
    ip: str | None
    signed_in_at: datetime
    last_seen_at: datetime
    current: bool  # this very browser


def browser_name(user_agent: str | None) -> str:
    """A short, human name for a User-Agent string (good enough to recognise one's devices)."""
    ua = user_agent or ""
    browser = next((name for marker, name in BROWSERS if marker in ua), None)
    if browser is None and "HeadlessChrome/" in ua:
        browser = "Chrome"
    system = next((name for marker, name in SYSTEMS if re.search(re.escape(marker), ua)), None)
    if browser and system:
        return f"{browser} on {system}"
    return browser or system or "Unknown browser"


def live_sessions(user: User, current_id: int | None) -> list[SessionLine]:
    """Every live session of the member, the current one first, then the most recently seen."""
    rows = store().logins.live_of(user.id)
    lines = [
        SessionLine(
            r.id, browser_name(r.user_agent), r.ip, r.auth_time, r.last_seen_at or r.auth_time, r.id == current_id
        )
        for r in rows
    ]
    return sorted(lines, key=lambda s: (not s.current, -s.last_seen_at.timestamp()))


def end_session(user: User, session_id: int) -> bool:
    """End one live session of the member (never another member's). True when it ended."""
    return store().logins.end_all_of(user.id, only=session_id) == 1
