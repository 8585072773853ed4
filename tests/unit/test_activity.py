"""The activity pictures' numbers (issue 21, item 6): per UTC day for 30 days, from the audit
trail, one app's or the provider's; and the SVG they are drawn as."""

from datetime import UTC, datetime, timedelta

from app.core.extensions import db
from app.models import AuditEvent
from app.services.activity import activity
from app.web.charts import bar_chart
from tests.factories import make_client, make_member

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def add(action, client, member, at):
    db.session.add(
        AuditEvent(action=action, client_id=client.id, actor_id=member.id if member else None, created_at=at)
    )


def test_counts_per_day_for_one_app_and_for_the_provider(app_context):
    ana, bo = make_member(), make_member()
    liner, _ = make_client(name="Liner Notes")
    other, _ = make_client(name="Setlist")
    today, yesterday = NOW.replace(hour=1), NOW - timedelta(days=1)
    for member in (ana, ana, bo):
        add("signin.ok", liner, member, today)
    add("consent.granted", liner, ana, today)
    add("signin.ok", liner, bo, yesterday.replace(hour=23, minute=59))
    add("signin.failed", liner, bo, today)  # not a sign-in
    add("signin.ok", other, ana, today)
    add("signin.ok", liner, ana, NOW - timedelta(days=30))  # one day too old
    db.session.commit()

    mine = {s.key: s for s in activity(liner.id, NOW).series}
    assert len(mine["signins"].values) == 30 and mine["signins"].days[-1] == NOW.date()
    assert mine["signins"].values[-2:] == [1, 3] and mine["signins"].total == 4
    assert mine["consents"].values[-1] == 1 and mine["consents"].total == 1
    assert mine["members"].values[-2:] == [1, 2]  # distinct members a day
    everyone = {s.key: s for s in activity(None, NOW).series}
    assert everyone["signins"].values[-1] == 4 and everyone["members"].values[-1] == 2


def test_the_chart_is_svg_that_names_itself_without_style_or_script(app_context):
    series = activity(None, NOW).series[0]
    svg = str(bar_chart(series, "c1"))
    assert svg.startswith('<svg class="chart" id="c1"') and 'role="img"' in svg
    assert 'aria-labelledby="c1-title c1-desc"' in svg and "0 sign-ins in all" in svg
    assert svg.count("<rect") == 30 and "style=" not in svg and "<script" not in svg
    assert "<title>24 Nov: 0 sign-ins</title>" in svg


def test_the_activity_reads_use_indexes(app_context):
    """Bounded and indexed: one app's 30 days by (client_id, created_at), the provider's by
    (action, created_at) - never a walk through the whole trail."""
    import pytest
    from sqlalchemy import text

    if db.engine.dialect.name != "sqlite":
        pytest.skip("query plans are checked on SQLite (PostgreSQL picks plans by table statistics)")
    since = "'2026-10-26 00:00:00'"
    for sql, index in (
        (
            f"SELECT date(created_at), action, count(id) FROM audit_events WHERE action IN ('signin.ok', "
            f"'consent.granted') AND created_at >= {since} AND client_id = 1 GROUP BY 1, 2",
            "ix_audit_events_client_created",
        ),
        (
            f"SELECT date(created_at), action, count(id) FROM audit_events WHERE action IN ('signin.ok', "
            f"'consent.granted') AND created_at >= {since} GROUP BY 1, 2",
            "ix_audit_events_action_created",
        ),
    ):
        plan = " | ".join(str(r[-1]) for r in db.session.execute(text("EXPLAIN QUERY PLAN " + sql)).all())
        assert plan.startswith("SEARCH") and index in plan, plan
