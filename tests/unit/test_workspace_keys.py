"""Workspace keys (`mwk_`) at the key door, through the Flask test client: reach (the profiles on
the key's roster, their credits, charts and collaborators on `/v1`, and nothing else), taking a
profile off the roster, the budget (60 a minute and 10,000 a UTC day, the day tested with a clock
that moves: time-machine; in memory and in Redis), the `api_requests` meter, rotation and
revocation, and the owner's suspension."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import redis
import time_machine
from limits import RateLimitItemPerDay

from app.core.extensions import db, limiter
from app.models import ApiKey, ApiUsage, AuditEvent, User
from app.models.base import sha256_hex
from app.services import rosters
from app.services.apikeys import PLAN_LIMITS, revoke_key, rotate_key
from app.services.members import suspend_member, unsuspend_member
from app.web.api.gateway import DAY_SCOPE, day_counter
from tests.api_support import count_queries, make_catalog, uid
from tests.conftest import redis_test_url, unavailable
from tests.integration.test_query_counts import forget_kept_rows
from tests.issued import separate_app
from tests.key_support import index_catalog, key_header, make_key, make_roster, make_workspace_key
from tests.unit.test_api_gateway import assert_gateway_error, assert_headers, catalog_paths, meter

CANNOT = "You cannot consume this service"
REDIS_URL = redis_test_url(4)  # this group's Redis database (TEST_REDIS_DB when set)


@pytest.fixture(autouse=True)
def fresh_budgets(app):
    limiter.init_app(app)  # a test with Redis hands the shared limiter back to memory storage
    limiter.reset()


@pytest.fixture
def catalog():
    made = make_catalog(credits=12)
    index_catalog()
    return made


@pytest.fixture
def roster(catalog):
    """A plain member's roster holding `mine` (Ada Mine), not `other` (Otto Other)."""
    return make_roster(profiles=(catalog.mine,))


def roster_paths(profile_id: str) -> list[str]:
    return [
        f"/v1/profile/{profile_id}",
        f"/v1/profile/{profile_id}/credits",
        f"/v1/profile/{profile_id}/charts",
        f"/v1/profile/{profile_id}/collaborators",
    ]


def test_a_workspace_key_reads_its_roster_profiles_and_is_refused_everything_else(client, catalog, roster):
    key, value = make_workspace_key(roster)
    assert value.startswith("mwk_") and len(value) == 47 and key.prefix == value[:12]
    assert db.session.get(User, key.owner_id).role == "member"  # any member holds one, not only developers
    for n, path in enumerate(roster_paths(catalog.mine)):
        response = client.get(path, headers=key_header(value))
        assert response.status_code == 200, (path, response.get_data(as_text=True))
        assert response.get_json()["result"] == "ok"
        assert_headers(response)
        assert response.headers["RateLimit-Limit"] == "60" and response.headers["RateLimit-Remaining"] == str(59 - n)
        assert response.headers["X-RateLimit-Limit-Day"] == "10000"
        assert response.headers["X-RateLimit-Remaining-Day"] == str(9999 - n)
    assert client.get(f"/v1/profile/{catalog.mine}", headers=key_header(value)).get_json()["data"]["name"] == "Ada Mine"
    # Another profile of the catalog, on any of the four paths: not on the roster.
    for path in roster_paths(catalog.other) + roster_paths(uid(99, 1)) + ["/v1/profile/not-a-uuid"]:
        assert_headers(assert_gateway_error_response(client.get(path, headers=key_header(value))))
    # Every other catalog operation, the sign-in-only paths and the widget API: refused.
    for method, path, kw in catalog_paths(catalog)[4:]:
        assert_gateway_error_response(getattr(client, method)(path, headers=key_header(value), **kw))
    for path in ("/v1/me", "/v1/me/credits", "/v1/me/analytics"):
        assert_gateway_error_response(client.get(path, headers=key_header(value)))
    for path in (
        f"/embed/v1/profile/{catalog.mine}",
        f"/embed/v1/profile/{catalog.mine}/credits",
        f"/embed/v1/cards?ids={catalog.mine}",
        f"/embed/v1/rosters/{roster.id}/cards",
    ):
        assert_gateway_error_response(client.get(path, headers=key_header(value, Origin="https://widgets.example")))
    db.session.expire_all()
    assert meter(key) == 5  # the five answers with data; no refusal is metered


def assert_gateway_error_response(response):
    assert_gateway_error(response, 403, CANNOT)
    return response


def test_an_id_in_capitals_is_the_same_profile(client, catalog, roster):
    _, value = make_workspace_key(roster)
    response = client.get(f"/v1/profile/{catalog.mine.upper()}/credits?limit=2", headers=key_header(value))
    assert response.status_code == 200 and response.get_json()["data"]["totalCount"] == 12


@pytest.mark.parametrize("value", ["mwk_" + "A" * 43, "mwk_short", "mwk_" + "B" * 44])
def test_an_unknown_workspace_key_is_401_unauthorized(client, catalog, value):
    for path in [*roster_paths(catalog.mine), "/v1/roles", "/v1/me", f"/embed/v1/profile/{catalog.mine}"]:
        assert_gateway_error(client.get(path, headers=key_header(value)), 401, "Unauthorized")


def test_taking_a_profile_off_the_roster_cuts_the_keys_reach_at_once(client, catalog, roster):
    key, value = make_workspace_key(roster)
    owner = db.session.get(User, roster.owner_id)
    assert client.get(f"/v1/profile/{catalog.mine}/charts", headers=key_header(value)).status_code == 200
    assert rosters.remove_profile(roster, catalog.mine, actor=owner).name == "Ada Mine"
    db.session.commit()
    for path in roster_paths(catalog.mine):  # the very next request, same key, same process
        assert_gateway_error(client.get(path, headers=key_header(value)), 403, CANNOT)
    rosters.add_profile(roster, catalog.other, actor=owner)
    db.session.commit()
    assert client.get(f"/v1/profile/{catalog.other}", headers=key_header(value)).status_code == 200
    db.session.expire_all()
    assert meter(key) == 2
    actions = db.session.scalars(db.select(AuditEvent.action).order_by(AuditEvent.id)).all()
    assert actions[-2:] == ["roster.profile_removed", "roster.profile_added"]


def test_a_workspace_key_reaches_only_its_own_roster(client, catalog):
    """Two rosters of one member: each key reaches its own roster's profiles, not the other's."""
    owner = make_roster(profiles=(catalog.mine,), name="Producers")
    member = db.session.get(User, owner.owner_id)
    writers = make_roster(member, profiles=(catalog.other,), name="Writers")
    _, producers_key = make_workspace_key(owner)
    _, writers_key = make_workspace_key(writers)
    assert client.get(f"/v1/profile/{catalog.mine}", headers=key_header(producers_key)).status_code == 200
    assert_gateway_error(client.get(f"/v1/profile/{catalog.other}", headers=key_header(producers_key)), 403, CANNOT)
    assert client.get(f"/v1/profile/{catalog.other}", headers=key_header(writers_key)).status_code == 200
    assert_gateway_error(client.get(f"/v1/profile/{catalog.mine}", headers=key_header(writers_key)), 403, CANNOT)


def test_the_lookup_is_one_query_with_the_owner_joined_and_reach_one_by_primary_key(client, catalog, roster):
    _, secret = make_key()
    _, value = make_workspace_key(roster)
    # The owner's billing standing is read once and then kept (app/services/billing/standing.py).
    assert client.get(f"/v1/profile/{catalog.mine}", headers=key_header(secret)).status_code == 200
    forget_kept_rows(client.application)  # on PostgreSQL a key read once is kept: read it again here
    with count_queries() as by_secret:
        assert client.get(f"/v1/profile/{catalog.mine}", headers=key_header(secret)).status_code == 200
    forget_kept_rows(client.application)
    with count_queries() as by_workspace:
        assert client.get(f"/v1/profile/{catalog.mine}", headers=key_header(value)).status_code == 200
    assert by_workspace[0] == by_secret[0] and "JOIN users" in by_workspace[0]  # the same one lookup
    reach = by_workspace[1]
    assert "roster_profiles" in reach and "roster_profiles.roster_id = " in reach and "profile_id = " in reach
    assert by_workspace[2:] == by_secret[1:]  # then the same reads and the same meter write
    forget_kept_rows(client.application)
    with count_queries() as refused:
        assert client.get(f"/v1/profile/{catalog.other}", headers=key_header(value)).status_code == 403
    assert refused == by_workspace[:2]  # refused after the lookup and the reach check: nothing else


def test_60_requests_a_minute_then_429_with_retry_after(client, catalog, roster):
    assert PLAN_LIMITS["workspace"].window.amount == 60 and PLAN_LIMITS["workspace"].window.get_expiry() == 60
    key, value = make_workspace_key(roster)
    path = f"/v1/profile/{catalog.mine}"
    with time_machine.travel(datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC), tick=False):
        answers = [client.get(path, headers=key_header(value)) for _ in range(61)]
    assert [a.status_code for a in answers[:60]] == [200] * 60
    assert answers[59].headers["RateLimit-Remaining"] == "0"
    refused = answers[60]
    assert_gateway_error(refused, 429, "API rate limit exceeded: 60 per minute for this key")
    assert 1 <= int(refused.headers["Retry-After"]) <= 60 and refused.headers["RateLimit-Remaining"] == "0"
    assert refused.headers["RateLimit-Limit"] == "60"
    assert_headers(refused)
    db.session.expire_all()
    assert meter(key) == 60  # the refused request is not metered
    # Another workspace key of the same roster has its own budget.
    _, other = make_workspace_key(roster, name="Second")
    with time_machine.travel(datetime(2026, 11, 28, 12, 0, 30, tzinfo=UTC), tick=False):
        assert client.get(path, headers=key_header(other)).status_code == 200


@pytest.fixture(params=["memory", "redis"])
def counted_in(request, app, settings):
    """A test client whose counters live in memory, or in Redis (REDIS_URL set, as in production)."""
    if request.param == "memory":
        yield app.test_client()
        return
    store = redis.Redis.from_url(REDIS_URL)
    try:
        store.ping()
    except redis.ConnectionError:
        unavailable("no Redis on 127.0.0.1:6379", "the Redis tests")
    store.flushdb()
    try:
        yield separate_app(settings, REDIS_URL=REDIS_URL).test_client()
    finally:
        store.flushdb()
        limiter.init_app(app)  # back to memory storage


def test_10000_requests_a_day_then_429_until_the_utc_day_ends(counted_in, catalog, roster):
    """The cap is reached by spending the day's counter to 9,999 where the gateway counts it, not by
    10,000 requests; the clock is moved to the next UTC day rather than waited for."""
    key, value = make_workspace_key(roster)
    path = f"/v1/profile/{catalog.mine}/credits"
    evening = datetime(2026, 11, 28, 21, 30, 0, tzinfo=UTC)
    with time_machine.travel(evening, tick=False) as clock:
        limiter.limiter.hit(RateLimitItemPerDay(10_000), DAY_SCOPE, day_counter(key.id, evening.date()), cost=9_999)
        last = counted_in.get(path, headers=key_header(value))
        assert last.status_code == 200 and last.headers["X-RateLimit-Remaining-Day"] == "0"
        refused = counted_in.get(path, headers=key_header(value))
        assert_gateway_error(
            refused, 429, "API rate limit exceeded: 10000 per day for this key (the count starts again at 00:00 UTC)"
        )
        assert refused.headers["Retry-After"] == str(int(timedelta(hours=2, minutes=30).total_seconds()))
        assert refused.headers["RateLimit-Reset"] == refused.headers["Retry-After"]
        assert refused.headers["RateLimit-Remaining"] == "0" and refused.headers["RateLimit-Limit"] == "60"
        assert refused.headers["X-RateLimit-Remaining-Day"] == "0"
        assert_headers(refused)
        clock.move_to(datetime(2026, 11, 28, 23, 59, 59, tzinfo=UTC))  # still the same day: still refused
        late = counted_in.get(path, headers=key_header(value))
        assert late.status_code == 429 and late.headers["Retry-After"] == "1"
        clock.move_to(datetime(2026, 11, 29, 0, 0, 1, tzinfo=UTC))  # a new UTC day: a new count
        again = counted_in.get(path, headers=key_header(value))
        assert again.status_code == 200, again.get_data(as_text=True)
        assert again.headers["X-RateLimit-Remaining-Day"] == "9999"
    db.session.expire_all()
    days = dict(
        db.session.execute(
            db.select(ApiUsage.day, db.func.sum(ApiUsage.count)).where(ApiUsage.key_id == key.id).group_by(ApiUsage.day)
        ).all()
    )
    assert days == {evening.date(): 1, evening.date() + timedelta(days=1): 1}  # refusals are not metered


def test_a_console_key_has_no_day_cap(client, catalog):
    _, secret = make_key()
    response = client.get("/v1/roles", headers=key_header(secret))
    assert response.status_code == 200 and "X-RateLimit-Limit-Day" not in response.headers


def test_rotation_stops_the_old_value_at_once_or_after_its_grace(client, catalog, roster):
    key, first = make_workspace_key(roster)
    owner = db.session.get(User, key.owner_id)
    path = f"/v1/profile/{catalog.mine}"
    second = rotate_key(key, actor=owner)
    db.session.commit()
    assert second.startswith("mwk_") and second != first
    assert_gateway_error(client.get(path, headers=key_header(first)), 401, "Unauthorized")
    assert client.get(path, headers=key_header(second)).status_code == 200
    third = rotate_key(key, timedelta(hours=24), actor=owner)
    db.session.commit()
    assert client.get(path, headers=key_header(second)).status_code == 200  # within its grace
    assert client.get(path, headers=key_header(third)).status_code == 200
    stored = db.session.get(ApiKey, key.id)
    assert stored.secret_hash == sha256_hex(third) and stored.roster_id == roster.id and stored.plan == "workspace"
    db.session.expire_all()
    assert meter(key) == 3  # one key, one meter, across its values


def test_revocation_is_immediate_and_final(client, catalog, roster):
    key, value = make_workspace_key(roster)
    assert client.get(f"/v1/profile/{catalog.mine}", headers=key_header(value)).status_code == 200
    assert revoke_key(key, actor=db.session.get(User, key.owner_id))
    db.session.commit()
    assert_gateway_error(client.get(f"/v1/profile/{catalog.mine}", headers=key_header(value)), 401, "Unauthorized")
    db.session.expire_all()
    assert meter(key) == 1


def test_a_suspended_members_workspace_keys_are_paused_and_come_back_when_it_is_lifted(client, catalog, roster):
    key, value = make_workspace_key(roster)
    owner = db.session.get(User, key.owner_id)
    path = f"/v1/profile/{catalog.mine}"
    assert client.get(path, headers=key_header(value)).status_code == 200
    suspend_member(owner)
    db.session.commit()
    with count_queries() as paused:
        assert_gateway_error(client.get(path, headers=key_header(value)), 401, "Unauthorized")
    assert len(paused) == 1 and "JOIN users" in paused[0]  # refused by its one lookup
    assert db.session.get(ApiKey, key.id).status == "paused"
    unsuspend_member(db.session.get(User, key.owner_id))
    db.session.commit()
    assert client.get(path, headers=key_header(value)).status_code == 200
    db.session.expire_all()
    assert meter(key) == 2


def test_deleting_a_roster_revokes_its_keys(client, catalog, roster):
    key, value = make_workspace_key(roster)
    owner = db.session.get(User, key.owner_id)
    assert rosters.delete_roster(roster, actor=owner) == 1
    db.session.commit()
    assert_gateway_error(client.get(f"/v1/profile/{catalog.mine}", headers=key_header(value)), 401, "Unauthorized")
    db.session.expire_all()
    stored = db.session.get(ApiKey, key.id)
    assert stored.is_revoked and stored.roster_id is None
    assert rosters.rosters_of(owner) == []
