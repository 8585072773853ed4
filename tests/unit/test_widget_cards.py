"""`GET /embed/v1/cards`, what the widget's cards show: every value from the catalog, in the order
asked, unknown ids left out, the batch's bounds, one count on the meter per request whatever its
size, a fixed number of queries whatever its size, the gateway in front, and the OpenAPI contract."""

from __future__ import annotations

import pytest
from openapi_core import OpenAPI
from openapi_core.contrib.werkzeug import WerkzeugOpenAPIRequest, WerkzeugOpenAPIResponse

from app.core.extensions import db
from app.models import ApiUsage, Profile
from app.services.apikeys import revoke_key
from app.web.api import cards
from app.web.api.openapi import openapi_document
from tests.api_support import count_queries, make_catalog, uid
from tests.key_support import key_header, make_key

pytestmark = pytest.mark.usefixtures("fresh_budgets")  # tests/conftest.py

ORIGIN = {"Origin": "https://widgets.example"}


@pytest.fixture
def catalog():
    return make_catalog(credits=12)


@pytest.fixture
def publishable():
    return make_key("publishable", domains=["widgets.example"])


def get_cards(client, ids: str, value: str, **headers):
    return client.get(f"/embed/v1/cards?ids={ids}", headers=key_header(value, **{**ORIGIN, **headers}))


def meter(key) -> int:
    db.session.expire_all()
    return db.session.scalar(
        db.select(db.func.coalesce(db.func.sum(ApiUsage.count), 0)).where(ApiUsage.key_id == key.id)
    )


def expected_mine(catalog, url: str) -> dict:
    """make_catalog(12): credits 0..11 are Ada's; every third holds Co-Producer and Composer, the
    rest Lyricist; two credits a day from 2020-01-01, the later id first on a shared day."""
    return {
        "id": catalog.mine,
        "name": "Ada Mine",
        "city": "Stockholm",
        "country": "Sweden",
        "avatarUrl": "https://images.credits.example/profiles/ada.jpg",
        "url": url,
        "creditCount": 12,
        "topRoles": ["Lyricist", "Co-Producer", "Composer"],
        "recentCredits": [
            {"title": "Track 11", "album": "Album 11", "releaseDate": "2020-01-06", "roles": ["Lyricist"]},
            {"title": "Track 10", "album": "Album 10", "releaseDate": "2020-01-06", "roles": ["Lyricist"]},
            {"title": "Track 9", "album": "Album 9", "releaseDate": "2020-01-05", "roles": ["Co-Producer", "Composer"]},
        ],
        "charts": [{"chartName": "Top Producers", "position": 3}, {"chartName": "Top Songwriters", "position": 12}],
    }


def test_a_card_holds_what_the_widget_shows(app, client, catalog, publishable):
    _, value = publishable
    response = get_cards(client, catalog.mine, value)
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_json()
    assert body["result"] == "ok" and body["code"] == 200
    assert body["data"] == [expected_mine(catalog, app.config["ISSUER_URL"] + "/")]
    assert response.headers["Cache-Control"] == "no-store"  # data is served live, never stored
    assert response.headers["Access-Control-Allow-Origin"] == "*"


def test_cards_come_in_the_order_asked_and_unknown_ids_are_left_out(client, catalog, publishable):
    _, value = publishable
    asked = ",".join([catalog.other, uid(99, 1), "not-a-uuid", catalog.mine.upper(), catalog.other, ""])
    data = get_cards(client, asked, value).get_json()["data"]
    assert [card["id"] for card in data] == [catalog.other, catalog.mine]
    other = data[0]
    assert other["name"] == "Otto Other" and other["city"] is None and other["avatarUrl"] is None
    assert other["creditCount"] == 3 and other["charts"] == [{"chartName": "Top Producers", "position": 1}]
    assert [credit["title"] for credit in other["recentCredits"]] == ["Track 14", "Track 13", "Track 12"]
    assert get_cards(client, uid(99, 1), value).get_json()["data"] == []  # none found: an empty list


def test_a_profile_without_credits_or_charts_has_an_empty_card(client, catalog, publishable):
    db.session.add(Profile(id=uid(50, 1), name="New Name"))
    db.session.commit()
    [card] = get_cards(client, uid(50, 1), publishable[1]).get_json()["data"]
    assert card["creditCount"] == 0 and card["topRoles"] == card["recentCredits"] == card["charts"] == []


def test_cards_link_to_the_profile_page_when_the_platform_has_one(app, client, catalog, publishable, monkeypatch):
    monkeypatch.setitem(app.config, "PROFILE_PAGE_URL", "https://credits.example.com/p/{id}")
    [card] = get_cards(client, catalog.mine, publishable[1]).get_json()["data"]
    assert card["url"] == f"https://credits.example.com/p/{catalog.mine}"


@pytest.mark.parametrize(
    "query",
    ["", "?ids=", "?ids=,,", "?ids=" + ",".join(uid(n, 1) for n in range(1, 26)), f"?ids={uid(1, 1)}&ids={uid(2, 1)}"],
)
def test_a_batch_of_none_or_more_than_24_is_400(client, catalog, publishable, query):
    response = client.get(f"/embed/v1/cards{query}", headers=key_header(publishable[1], **ORIGIN))
    assert response.status_code == 400
    assert response.get_json() == {
        "result": "error",
        "code": 400,
        "message": "Invalid parameters supplied",
        "param": "ids",
    }


def test_24_ids_are_one_request(client, catalog, publishable):
    ids = [catalog.mine, catalog.other] + [uid(n, 1) for n in range(100, 122)]
    response = get_cards(client, ",".join(ids), publishable[1])
    assert response.status_code == 200 and len(response.get_json()["data"]) == 2


def test_each_request_counts_once_on_the_meter_whatever_it_holds(client, catalog, publishable):
    key, value = publishable
    assert get_cards(client, catalog.mine, value).status_code == 200
    assert meter(key) == 1
    assert get_cards(client, f"{catalog.mine},{catalog.other}", value).status_code == 200
    assert meter(key) == 2  # two cards, one request
    assert get_cards(client, uid(99, 1), value).status_code == 200
    assert meter(key) == 3  # a request that found nothing passed the gateway: a call
    assert client.get("/embed/v1/cards", headers=key_header(value, **ORIGIN)).status_code == 400
    assert meter(key) == 3  # a refused request (400) is not
    assert get_cards(client, catalog.mine, value, Origin="https://evil.example").status_code == 403
    assert meter(key) == 3  # nor a refusal at the gateway


def test_the_gateway_stands_in_front(client, catalog, publishable):
    key, value = publishable
    for response, status, message in (
        (client.get(f"/embed/v1/cards?ids={catalog.mine}", headers=ORIGIN), 401, "No API key found in request"),
        (get_cards(client, catalog.mine, "mpk_" + "x" * 43), 401, "Unauthorized"),
        (get_cards(client, catalog.mine, value, Origin="https://widgets.example.evil.example"), 403, None),
    ):
        assert response.status_code == status
        assert set(response.get_json()) == {"message", "request_id"}
        assert message is None or response.get_json()["message"] == message
    revoke_key(key)
    db.session.commit()
    assert get_cards(client, catalog.mine, value).status_code == 401
    _, secret = make_key()
    assert client.get(f"/embed/v1/cards?ids={catalog.mine}", headers=key_header(secret)).status_code == 200


def test_a_batch_costs_the_same_queries_whatever_its_size(app, catalog):
    db.session.add_all([Profile(id=uid(n, 1), name=f"Roster {n}") for n in range(200, 222)])
    db.session.commit()
    with count_queries() as one:
        assert len(cards.cards([catalog.mine])) == 1
    with count_queries() as many:
        assert len(cards.cards([catalog.mine, catalog.other] + [uid(n, 1) for n in range(200, 222)])) == 24
    assert len(one) == len(many) == 6


def test_cards_validate_against_the_openapi_document(client, catalog, publishable):
    spec = OpenAPI.from_dict(openapi_document())
    _, value = publishable
    for response, status in (
        (get_cards(client, f"{catalog.mine},{catalog.other}", value), 200),
        (client.get("/embed/v1/cards", headers=key_header(value, **ORIGIN)), 400),
        (get_cards(client, catalog.mine, value, Origin="https://evil.example"), 403),
    ):
        assert response.status_code == status
        spec.validate_response(WerkzeugOpenAPIRequest(response.request), WerkzeugOpenAPIResponse(response))
