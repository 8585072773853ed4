"""A roster's cards on the widget API, `GET /embed/v1/rosters/<id>/cards`: for a key of the
roster's owner only (a publishable key from its domains, or a secret key), in the roster's order,
a page of up to 24 at a time, one count on the meter per request."""

from __future__ import annotations

import pytest

from app.core.extensions import db
from app.models import Profile, User
from app.services import rosters
from tests.api_support import make_catalog, uid
from tests.key_support import key_header, make_developer, make_key, make_roster, make_workspace_key
from tests.unit.test_api_gateway import assert_gateway_error, assert_headers, meter

pytestmark = pytest.mark.usefixtures("fresh_budgets")  # tests/conftest.py

PAGE = "https://widgets.example/artists"


@pytest.fixture
def owner():
    return make_developer()


@pytest.fixture
def roster(owner):
    """Three profiles added out of order: Otto Other, a third one, Ada Mine."""
    catalog = make_catalog(credits=4)
    db.session.add(Profile(id=uid(3, 1), name="Bea Third", city="Oslo", country="Norway"))
    db.session.commit()
    return make_roster(owner, profiles=(catalog.other, uid(3, 1), catalog.mine))


def cards_of(response) -> list[str]:
    assert response.status_code == 200, response.get_data(as_text=True)
    return [card["name"] for card in response.get_json()["data"]["items"]]


def test_the_owners_publishable_key_reads_the_rosters_cards_in_its_order(client, owner, roster):
    key, value = make_key("publishable", owner=owner, domains=["widgets.example"])
    response = client.get(f"/embed/v1/rosters/{roster.id}/cards", headers=key_header(value, Referer=PAGE))
    assert_headers(response)
    data = response.get_json()["data"]
    assert {k: data[k] for k in ("limit", "offset", "totalCount")} == {"limit": 24, "offset": 0, "totalCount": 3}
    assert cards_of(response) == ["Ada Mine", "Bea Third", "Otto Other"]  # by name
    ada = data["items"][0]
    assert ada["creditCount"] == 4 and ada["city"] == "Stockholm" and ada["url"].startswith("http")
    # Pages: limit 1 to 24, offset; past the end is an empty page.
    paged = client.get(f"/embed/v1/rosters/{roster.id}/cards?limit=2&offset=1", headers=key_header(value, Referer=PAGE))
    assert cards_of(paged) == ["Bea Third", "Otto Other"]
    beyond = client.get(f"/embed/v1/rosters/{roster.id}/cards?offset=3", headers=key_header(value, Referer=PAGE))
    assert cards_of(beyond) == [] and beyond.get_json()["data"]["totalCount"] == 3
    for bad in ("limit=25", "limit=0", "offset=-1", "limit=2&limit=3"):
        refused = client.get(f"/embed/v1/rosters/{roster.id}/cards?{bad}", headers=key_header(value, Referer=PAGE))
        assert refused.status_code == 400 and refused.get_json()["message"] == "Invalid parameters supplied", bad
    db.session.expire_all()
    assert meter(key) == 3  # one count a request, whatever the cards; refused (400) requests none


def test_a_profile_taken_off_the_roster_leaves_the_grid_at_once(client, owner, roster):
    _, value = make_key("publishable", owner=owner, domains=["widgets.example"])
    rosters.remove_profile(roster, uid(3, 1), actor=owner)
    db.session.commit()
    response = client.get(f"/embed/v1/rosters/{roster.id}/cards", headers=key_header(value, Referer=PAGE))
    assert cards_of(response) == ["Ada Mine", "Otto Other"]


def test_the_owners_secret_key_reads_it_from_anywhere(client, owner, roster):
    _, secret = make_key(owner=owner)
    assert len(cards_of(client.get(f"/embed/v1/rosters/{roster.id}/cards", headers=key_header(secret)))) == 3


def test_another_members_key_or_an_unknown_roster_is_404_and_counts_as_a_lookup(client, owner, roster):
    stranger, value = make_key("publishable", domains=["widgets.example"])
    assert stranger.owner_id != owner.id
    for roster_id in (roster.id, uid(5, 9), "not-a-roster"):
        response = client.get(f"/embed/v1/rosters/{roster_id}/cards", headers=key_header(value, Referer=PAGE))
        assert response.status_code == 404 and response.get_json() == {
            "result": "error",
            "code": 404,
            "message": "Not found",
        }
        assert "Ada" not in response.get_data(as_text=True)
    db.session.expire_all()
    assert meter(stranger) == 3


def test_the_gateway_refuses_what_it_refuses_everywhere(client, owner, roster):
    key, value = make_key("publishable", owner=owner, domains=["widgets.example"])
    path = f"/embed/v1/rosters/{roster.id}/cards"
    assert_gateway_error(client.get(path), 401, "No API key found in request")
    assert_gateway_error(
        client.get(path, headers=key_header(value, Origin="https://evil.example")),
        403,
        "You cannot consume this service",
    )
    _, workspace = make_workspace_key(roster, owner=db.session.get(User, owner.id))
    assert_gateway_error(
        client.get(path, headers=key_header(workspace, Referer=PAGE)), 403, "You cannot consume this service"
    )
    db.session.expire_all()
    assert meter(key) == 0
