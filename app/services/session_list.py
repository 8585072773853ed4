"""The member's live sessions as the account page lists them (browser and system, a device hint,
IP, last seen), and signing
one of them out. No Flask globals here; services only flush."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ua_parser import parse as parse_user_agent

from app.models import User
from app.store import store

# ua-parser's names, as people call them.
_BROWSER_NAMES = {
    "HeadlessChrome": "Chrome",
    "Chrome Mobile": "Chrome",
    "Chrome Mobile iOS": "Chrome",
    "Mobile Safari": "Safari",
    "Firefox Mobile": "Firefox",
    "Firefox iOS": "Firefox",
    "Edge Mobile": "Edge",
    "Samsung Internet": "Samsung Internet",
    "Other": "",
}
_SYSTEM_NAMES = {"Mac OS X": "macOS", "Chrome OS": "ChromeOS", "Other": ""}
# Device families that say nothing the system does not (or nothing at all).
_PLAIN_DEVICES = {"Other", "Mac", "Spider", "Generic Smartphone", "Generic Tablet", "Generic Feature Phone", "K"}


@dataclass(frozen=True)
class SessionLine:
    id: int
    browser: str  # "Firefox on macOS"
    device: str | None  # a device hint where the browser gives one: "iPhone", "Samsung SM-S911B"
    ip: str | None
    signed_in_at: datetime
    last_seen_at: datetime
    current: bool  # this very browser


def describe_browser(user_agent: str | None) -> tuple[str, str | None]:
    """A short, human name for a User-Agent string ("Safari on iOS") and a device hint ("iPhone";
    None when the string names none, as desktop browsers do), read by ua-parser's rules: enough for
    a member to recognise their devices, and nothing about where they are."""
    found = parse_user_agent((user_agent or "")[:1000])
    browser = found.user_agent.family if found.user_agent else ""
    browser = _BROWSER_NAMES.get(browser, browser)
    system = found.os.family if found.os else ""
    system = _SYSTEM_NAMES.get(system, system)
    device = found.device.family if found.device else None
    hint = device if device and device not in _PLAIN_DEVICES and device != system else None
    if browser and system:
        return f"{browser} on {system}", hint
    return browser or system or "Unknown browser", hint


def browser_name(user_agent: str | None) -> str:
    """The name alone, with the device hint when there is one: "Safari on iOS (iPhone)"."""
    name, device = describe_browser(user_agent)
    return f"{name} ({device})" if device else name


def live_sessions(user: User, current_id: int | None) -> list[SessionLine]:
    """Every live session of the member, the current one first, then the most recently seen."""
    rows = store().logins.live_of(user.id)
    lines = [
        SessionLine(
            r.id, *describe_browser(r.user_agent), r.ip, r.auth_time, r.last_seen_at or r.auth_time, r.id == current_id
        )
        for r in rows
    ]
    return sorted(lines, key=lambda s: (not s.current, -s.last_seen_at.timestamp()))


def end_session(user: User, session_id: int) -> bool:
    """End one live session of the member (never another member's). True when it ended."""
    return store().logins.end_all_of(user.id, only=session_id) == 1
