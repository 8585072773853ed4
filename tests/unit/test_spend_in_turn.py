"""Budgets taken in turn (`spend_in_turn`, the key door's per-second, minute and day budgets): the
same counters as limits' own, each counted only while the ones before it allowed the request; on
Redis in one round trip (a script), in memory budget by budget."""

from __future__ import annotations

import pytest
import redis
from limits import RateLimitItemPerHour, RateLimitItemPerMinute

from app.core.extensions import limiter
from app.services.throttle import Budget, spend, spend_in_turn
from tests.conftest import redis_test_url, unavailable
from tests.issued import separate_app

REDIS_URL = redis_test_url(5)  # this group's Redis database (TEST_REDIS_DB when set)


@pytest.fixture(params=["memory", "redis"])
def counters(request, app, settings):
    """An app context whose counters live in memory, or in Redis (REDIS_URL set, as in production)."""
    if request.param == "memory":
        yield request.param
        return
    store = redis.Redis.from_url(REDIS_URL)
    try:
        store.ping()
    except redis.ConnectionError:
        unavailable("no Redis on 127.0.0.1:6379", "the Redis tests")
    store.flushdb()
    try:
        with separate_app(settings, REDIS_URL=REDIS_URL).app_context():
            yield request.param
    finally:
        store.flushdb()
        limiter.init_app(app)  # back to memory storage


def test_each_budget_counts_until_one_refuses_and_the_rest_are_not_counted(counters):
    minute, hour = RateLimitItemPerMinute(2), RateLimitItemPerHour(3)
    budgets = [(minute, "test-burst", "k1"), (hour, "test-hour", "k1")]

    first = spend_in_turn(budgets)
    assert first is not None and [(s.allowed, s.remaining) for s in first] == [(True, 1), (True, 2)]
    assert 1 <= first[0].reset <= 60 and 60 < first[1].reset <= 3600
    second = spend_in_turn(budgets)
    assert second is not None and [(s.allowed, s.remaining) for s in second] == [(True, 0), (True, 1)]
    third = spend_in_turn(budgets)
    assert third is not None and [(s.allowed, s.remaining) for s in third] == [(False, 0)]  # the hour untouched

    # The counters are limits' own: what its limiter reads (and the decorators would count).
    assert limiter.limiter.get_window_stats(minute, "test-burst", "k1").remaining == 0
    assert limiter.limiter.get_window_stats(hour, "test-hour", "k1").remaining == 1
    assert not limiter.limiter.test(minute, "test-burst", "k1")
    other = spend_in_turn([(minute, "test-burst", "k2")])  # another key's budget is its own
    assert other is not None and other[0].allowed and other[0].remaining == 1


def test_a_budget_spent_elsewhere_refuses_at_once(counters):
    """A count taken through limits itself (another process, a decorator) is seen by the next turn."""
    minute = RateLimitItemPerMinute(5)
    limiter.limiter.hit(minute, "test-shared", "k3", cost=5)
    spent = spend_in_turn([(minute, "test-shared", "k3"), (RateLimitItemPerHour(10), "test-shared-hour", "k3")])
    assert spent is not None and len(spent) == 1 and not spent[0].allowed and spent[0].remaining == 0


def test_spend_alone_counts_on_the_same_counters(counters):
    """`spend` (the token endpoint's, the bearer budget's): on Redis the same script, one budget."""
    minute = RateLimitItemPerMinute(2)
    answers = [spend(minute, "test-one", "k4") for _ in range(3)]
    assert [(s.allowed, s.remaining) for s in answers if s is not None] == [(True, 1), (True, 0), (False, 0)]
    assert all(s is not None and 1 <= s.reset <= 60 for s in answers)
    assert limiter.limiter.get_window_stats(minute, "test-one", "k4").remaining == 0


def test_a_weighted_request_counts_its_cost_in_each_budget(counters):
    """A search counts more than a lookup (app/web/api/call_cost.py): its cost is taken from each
    budget it is counted against, on Redis as in memory, and a cost past what is left refuses it."""
    minute, hour = RateLimitItemPerMinute(25), RateLimitItemPerHour(100)
    spent = spend_in_turn([Budget(minute, "test-cost", "k5", 10), Budget(hour, "test-cost-hour", "k5", 1)])
    assert spent is not None and [(s.allowed, s.remaining) for s in spent] == [(True, 15), (True, 99)]
    assert limiter.limiter.get_window_stats(minute, "test-cost", "k5").remaining == 15
    alone = spend(minute, "test-cost", "k5", cost=10)
    assert alone is not None and alone.allowed and alone.remaining == 5
    refused = spend(minute, "test-cost", "k5", cost=10)
    assert refused is not None and not refused.allowed and refused.remaining == 0
