"""Dates and durations in words for the pages ("3 minutes ago", "on 24 Nov 2026", "24 hours"),
with the exact UTC time kept in a `<time datetime=...>` and its title: people read the words,
machines and the curious read the attribute. The member's pages show moments in the member's own
time zone (`local_time`: rewritten in the browser by static/local_time.js, UTC in the title)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flask import Flask
from markupsafe import Markup, escape

from app.models.base import utcnow

_UNITS = ((86400 * 7, "week"), (86400, "day"), (3600, "hour"), (60, "minute"), (1, "second"))


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def duration(seconds: float | timedelta) -> str:
    """The largest whole unit: 86400 -> "24 hours" (a day is said in hours below 2 days), 604800 -> "7 days"."""
    total = int(seconds.total_seconds() if isinstance(seconds, timedelta) else seconds)
    if total <= 0:
        return "no time"
    if total < 172800 and total % 3600 == 0 and total >= 3600:
        n, unit = total // 3600, "hour"
    else:
        n, unit = next((total // size, name) for size, name in _UNITS[1:] if total >= size)
    return f"{n} {unit}{'' if n == 1 else 's'}"


def ago(moment: datetime, now: datetime | None = None) -> str:
    """ "just now", "3 minutes ago", "in 2 hours", "yesterday"; past a week, "on 24 Nov 2026"."""
    moment, now = _aware(moment), _aware(now or utcnow())
    delta = (now - moment).total_seconds()
    past = delta >= 0
    delta = abs(delta)
    if delta < 45:
        return "just now" if past else "in a few seconds"
    if delta >= 60:  # to the nearest minute: a grace period of 24 hours, read a moment later, is still "in 1 day"
        delta = round(delta / 60) * 60
    if delta >= 7 * 86400:
        return f"on {moment.day} {moment.strftime('%b %Y')}"
    if past and 86400 <= delta < 2 * 86400:
        return "yesterday"
    n, unit = next((int(delta // size), name) for size, name in _UNITS[1:] if delta >= size)
    words = f"{n} {unit}{'' if n == 1 else 's'}"
    return f"{words} ago" if past else f"in {words}"


def exact(moment: datetime) -> str:
    return _aware(moment).strftime("%Y-%m-%d %H:%M:%S UTC")


def time_tag(moment: datetime | str | None, now: datetime | None = None) -> Markup:
    """A `<time>` element: the words as text, the exact UTC time as its datetime and title.
    An ISO 8601 string (as the key store describes its keys) is read as that time."""
    if moment is None or moment == "":
        return Markup('<span class="muted">never</span>')
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    moment = _aware(moment)
    return Markup('<time datetime="{}" title="{}">{}</time>').format(
        moment.isoformat(), exact(moment), escape(ago(moment, now))
    )


def local_time(moment: datetime | None, date_only: bool = False) -> Markup:
    """A moment for a member's page, to be read in their own time zone: the server knows none, so
    the text is UTC ("2026-11-24 14:05 UTC") until static/local_time.js rewrites it in the
    browser's zone ("24 Nov 2026, 15:05 CET"); the exact UTC time stays in the title either way."""
    if moment is None:
        return Markup('<span class="muted">never</span>')
    moment = _aware(moment)
    text = moment.strftime("%Y-%m-%d") if date_only else moment.strftime("%Y-%m-%d %H:%M UTC")
    return Markup('<time datetime="{}" title="{}" data-local="{}">{}</time>').format(
        moment.isoformat(), exact(moment), "date" if date_only else "datetime", text
    )


def local_date(moment: datetime | None) -> Markup:
    return local_time(moment, date_only=True)


def init_humanize(app: Flask) -> None:
    app.jinja_env.filters.update(
        when=time_tag, duration=duration, exact_time=exact, local_time=local_time, local_date=local_date
    )
