"""Dates and durations in words (issue 21, item 5), with the exact UTC time kept in the tag."""

from datetime import UTC, datetime, timedelta

from app.web.humanize import ago, duration, time_tag

NOW = datetime(2026, 11, 24, 21, 0, tzinfo=UTC)


def test_ago_reads_like_a_person_would_say_it():
    assert ago(NOW - timedelta(seconds=10), NOW) == "just now"
    assert ago(NOW - timedelta(minutes=1), NOW) == "1 minute ago"
    assert ago(NOW - timedelta(minutes=3, seconds=20), NOW) == "3 minutes ago"
    assert ago(NOW - timedelta(hours=5), NOW) == "5 hours ago"
    assert ago(NOW - timedelta(hours=30), NOW) == "yesterday"
    assert ago(NOW - timedelta(days=3), NOW) == "3 days ago"
    assert ago(datetime(2026, 10, 2, 8, 0, tzinfo=UTC), NOW) == "on 2 Oct 2026"
    assert ago(NOW + timedelta(hours=24), NOW) == "in 1 day"
    assert ago(NOW + timedelta(minutes=90), NOW) == "in 1 hour"
    assert ago(NOW + timedelta(hours=24, seconds=-2), NOW) == "in 1 day"  # read a moment after it was set
    assert ago(datetime(2026, 11, 24, 20, 0), NOW) == "1 hour ago"  # naive datetimes are UTC


def test_durations_in_the_largest_whole_unit():
    assert duration(3600) == "1 hour"
    assert duration(86400) == "24 hours"
    assert duration(604800) == "7 days"
    assert duration(90) == "1 minute"
    assert duration(timedelta(seconds=45)) == "45 seconds"
    assert duration(0) == "no time"


def test_the_tag_keeps_the_exact_time():
    tag = str(time_tag(NOW - timedelta(minutes=3), NOW))
    assert tag == ('<time datetime="2026-11-24T20:57:00+00:00" title="2026-11-24 20:57:00 UTC">3 minutes ago</time>')
    assert "never" in str(time_tag(None))


def test_an_iso_string_reads_as_that_time():
    """The key store describes its keys with ISO strings; the keys page shows them in words too."""
    assert ">3 minutes ago</time>" in str(time_tag("2026-11-24T20:57:00+00:00", NOW))
    assert "never" in str(time_tag(""))
