"""The /v1 endpoints through the Flask test client: envelope, paging, reach, auth errors and the
membership check made on every request."""

from __future__ import annotations

import re

import pytest

from app.core.extensions import db
from app.models import Client, Token
from app.models.base import utcnow
from app.services.members import set_tier
from tests.api_support import ALL_SCOPES, bearer, make_catalog, member_with_token, mint_token, uid
from tests.factories import db_state, make_client, make_member


@pytest.fixture
def catalog():
    return make_catalog(credits=45)


@pytest.fixture
def pro(catalog):
    user, app_client, token = member_with_token("pro", catalog.mine)
    return user, app_client, token


def get(client, path, token=None, **kw):
    headers = kw.pop("headers", {})
    if token:
        headers.update(bearer(token))
    return client.get(path, headers=headers, **kw)


def assert_error(response, status, message=None, param=None):
    """The error envelope: no member but these (`param`, the offending input, only when one is to
    blame); with `param` given, it must name that input."""
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert body["result"] == "error" and body["code"] == status
    assert set(body) <= {"result", "code", "message", "param"}, body
    if message is not None:
        assert body["message"] == message
    if param is not None:
        assert body["param"] == param
    return body


# -- success shapes --------------------------------------------------------------------------------


def test_me_returns_the_members_profile_in_the_envelope(client, catalog, pro):
    response = get(client, "/v1/me", pro[2])
    assert response.status_code == 200
    body = response.get_json()
    assert body["result"] == "ok" and body["code"] == 200
    assert body["data"] == {
        "id": catalog.mine,
        "name": "Ada Mine",
        "city": "Stockholm",
        "country": "Sweden",
        "bio": "Producer.",
        "website": None,
        "facebook": None,
        "twitter": "https://twitter.com/ada",
        "instagram": None,
        "spotifyId": "abc",
        "avatarUrl": "https://images.credits.example/profiles/ada.jpg",
    }
    assert response.headers["Cache-Control"] == "no-store"


def test_profile_by_own_id_is_the_same_as_me(client, catalog, pro):
    assert get(client, f"/v1/profile/{catalog.mine}", pro[2]).get_json() == get(client, "/v1/me", pro[2]).get_json()
    # The id is a UUID: its upper-case spelling names the same profile.
    assert get(client, f"/v1/profile/{catalog.mine.upper()}", pro[2]).status_code == 200


def test_credit_rows_have_the_spec_shape_and_a_stable_order(client, catalog, pro):
    body = get(client, "/v1/me/credits?limit=5", pro[2]).get_json()
    page = body["data"]
    assert set(page) == {"limit", "offset", "totalCount", "items"}
    assert (page["limit"], page["offset"], page["totalCount"]) == (5, 0, 45)
    first = page["items"][0]
    assert set(first) == {"credits", "track", "album", "releaseDate", "artists"}
    track_id, album_id = catalog.newest_first[0]
    n = int(track_id.replace("-", "")[-12:], 16) - 1  # the factory's row number
    assert first["track"] == {
        "id": track_id,
        "title": f"Track {n}",
        "popularity": n % 100,
        "isrcs": [f"USAAA20{n:05d}"],
        "spotifyId": f"sp{n}",
        "spotifyPreviewUrl": f"https://audio.credits.example/{n}.mp3",
    }
    assert first["album"] == {
        "id": album_id,
        "title": f"Album {n}",
        "albumArt": f"https://images.credits.example/a/{n}.jpg",
    }
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", first["releaseDate"])
    expected_roles = (
        [{"child": "Co-Producer", "parent": "Producer"}, {"child": "Composer", "parent": "Songwriter"}]
        if n % 3 == 0
        else [{"child": "Lyricist", "parent": "Songwriter"}]
    )
    assert first["credits"] == expected_roles
    assert first["artists"][0]["id"] in (catalog.mine, catalog.other)
    assert set(first["artists"][0]) == {"id", "name", "avatarUrl"}


def test_pages_walk_every_credit_once_in_order(client, catalog, pro):
    seen, offset = [], 0
    while True:
        page = get(client, f"/v1/me/credits?limit=7&offset={offset}", pro[2]).get_json()["data"]
        assert page["totalCount"] == 45
        if offset >= page["totalCount"]:
            assert page["items"] == []
            break
        seen += [(row["track"]["id"], row["album"]["id"]) for row in page["items"]]
        offset += 7
    assert seen == catalog.newest_first
    # The same page twice is the same page.
    again = get(client, "/v1/me/credits?limit=7&offset=14", pro[2]).get_json()
    assert again == get(client, "/v1/me/credits?offset=14&limit=7", pro[2]).get_json()


def test_artists_come_in_billing_order(client, catalog, pro):
    rows = get(client, "/v1/me/credits?limit=50", pro[2]).get_json()["data"]["items"]
    two = [row for row in rows if len(row["artists"]) == 2]
    assert two, "the factory gives every fifth track two artists"
    for row in two:
        n = int(row["track"]["id"].replace("-", "")[-12:], 16) - 1
        first_billed = catalog.mine if n % 2 else catalog.other
        assert [a["id"] for a in row["artists"]] == [first_billed, catalog.other if n % 2 else catalog.mine]


def test_analytics_for_pro(client, catalog, pro):
    body = get(client, "/v1/me/analytics", pro[2]).get_json()
    assert body["result"] == "ok"
    assert body["data"] == [
        {
            "chartName": "Top Producers",
            "position": 3,
            "positionChange": -1,
            "score": 900,
            "scoreChange": 25,
            "creditsCount": 20,
            "percentage": 1.5,
        },
        # scoreChange is absent (not null) where it is unknown.
        {
            "chartName": "Top Songwriters",
            "position": 12,
            "positionChange": 4,
            "score": 400,
            "creditsCount": 30,
            "percentage": 0.25,
        },
    ]
    assert get(client, f"/v1/profile/{catalog.mine}/charts", pro[2]).get_json() == body


# -- paging rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, limit, offset, items",
    [
        ("", 20, 0, 20),
        ("?limit=1", 1, 0, 1),
        ("?limit=50", 50, 0, 45),
        ("?limit=20&offset=40", 20, 40, 5),
        ("?offset=44", 20, 44, 1),
        ("?offset=45", 20, 45, 0),  # offset = totalCount: 200 with no items
        ("?offset=999999999999999999", 20, 999999999999999999, 0),
        ("?limit=007", 7, 0, 7),
        ("?cursor=abc&limit=3", 3, 0, 3),  # a cursor is ignored
    ],
)
def test_paging_edges_that_succeed(client, catalog, pro, query, limit, offset, items):
    for path in ("/v1/me/credits", f"/v1/profile/{catalog.mine}/credits"):
        response = get(client, path + query, pro[2])
        assert response.status_code == 200, response.get_data(as_text=True)
        page = response.get_json()["data"]
        assert (page["limit"], page["offset"], page["totalCount"], len(page["items"])) == (limit, offset, 45, items)


@pytest.mark.parametrize(
    "query, message",
    [
        ("?limit=51", "Too big page, max page size is 50"),
        ("?limit=1000", "Too big page, max page size is 50"),
        ("?limit=99999999999999999999999999", "Too big page, max page size is 50"),
        ("?limit=0", "Invalid parameters supplied"),
        ("?limit=abc", "Invalid parameters supplied"),
        ("?limit=-1", "Invalid parameters supplied"),
        ("?limit=", "Invalid parameters supplied"),
        ("?limit=2.5", "Invalid parameters supplied"),
        ("?limit=%2B5", "Invalid parameters supplied"),  # "+5"
        ("?limit=%205", "Invalid parameters supplied"),  # " 5"
        ("?limit=%D9%A3", "Invalid parameters supplied"),  # Arabic-Indic digit three
        ("?limit=5&limit=6", "Invalid parameters supplied"),
        ("?offset=-1", "Invalid parameters supplied"),
        ("?offset=abc", "Invalid parameters supplied"),
        ("?offset=1e3", "Invalid parameters supplied"),
        ("?offset=0&offset=1", "Invalid parameters supplied"),
        ("?offset=" + "9" * 40, "Invalid parameters supplied"),
    ],
)
def test_paging_edges_that_fail(client, catalog, pro, query, message):
    for path in ("/v1/me/credits", f"/v1/profile/{catalog.mine}/credits"):
        assert_error(get(client, path + query, pro[2]), 400, message)


# -- reach -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "/credits", "/charts"])
def test_another_profile_is_403_whether_or_not_it_exists(client, catalog, pro, suffix):
    for other in (catalog.other, uid(999, 1)):
        body = assert_error(get(client, f"/v1/profile/{other}{suffix}", pro[2]), 403)
        assert "own" in body["message"]
        assert "Otto" not in str(body)


@pytest.mark.parametrize(
    "bad", ["not-a-uuid", "1", "x" * 36, "%C3%A9t%C3%A9", "00000000000000000000000000000000x", "a" * 2000]
)
def test_malformed_profile_ids_are_404(client, catalog, pro, bad):
    for suffix in ("", "/credits", "/charts"):
        assert_error(get(client, f"/v1/profile/{bad}{suffix}", pro[2]), 404, "Not found")


def test_member_without_a_profile(client, catalog):
    _, _, token = member_with_token("pro", None)
    for path in ("/v1/me", "/v1/me/credits", "/v1/me/analytics"):
        assert_error(get(client, path, token), 404, "No credits profile is linked to this account")
    assert_error(get(client, f"/v1/profile/{catalog.mine}", token), 403)


def test_the_data_returned_is_only_the_members_own(client, catalog, pro):
    """Nothing of `other`'s own credits (its 3 rows) or charts comes back to this token."""
    rows = get(client, "/v1/me/credits?limit=50", pro[2]).get_json()["data"]["items"]
    other_tracks = {uid(n + 1, 2) for n in range(45, 48)}
    assert not other_tracks & {row["track"]["id"] for row in rows}
    charts = get(client, "/v1/me/analytics", pro[2]).get_json()["data"]
    assert 5000 not in [c["score"] for c in charts]


# -- authentication (RFC 6750) ---------------------------------------------------------------------

ROUTES = [
    "/v1/me",
    "/v1/me/credits",
    "/v1/me/analytics",
    f"/v1/profile/{uid(1, 1)}",
    f"/v1/profile/{uid(1, 1)}/credits",
    f"/v1/profile/{uid(1, 1)}/charts",
]


@pytest.mark.parametrize("path", ROUTES)
def test_no_token_is_401_with_a_bare_bearer_challenge(client, app, catalog, path):
    for headers in (
        {},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer "},
        {"Authorization": "Bearer"},
    ):
        response = client.get(path, headers=headers)
        if path.startswith("/v1/me"):  # sign-in only: the API's envelope
            assert_error(response, 401, "No access token found in request")
        else:  # an API key may call it too: the spec's gateway refusal, no envelope (issue 50, item 18)
            assert response.status_code == 401
            body = response.get_json()
            assert body == {"message": "No API key found in request", "request_id": body["request_id"]}
            assert body["request_id"] and response.headers["X-Request-Id"] == body["request_id"]
        assert response.headers["WWW-Authenticate"] == f'Bearer realm="{app.config["ISSUER_URL"]}"'


@pytest.mark.parametrize("path", ROUTES)
def test_invalid_expired_revoked_or_disabled_is_invalid_token(client, catalog, path):
    user = make_member(tier="pro", profile_id=catalog.mine)
    app_client, _ = make_client()
    expired = mint_token(user, app_client, lifetime=-5)
    revoked = mint_token(user, app_client, revoked=True)
    disabled_app, _ = make_client(name="Disabled App")
    of_disabled = mint_token(user, disabled_app)
    disabled_app.status = "disabled"
    db.session.commit()
    for token in ("not-a-token", "x" * 600, expired, revoked, of_disabled, "\u00e9t\u00e9"):
        response = client.get(path, headers={"Authorization": f"Bearer {token}".encode().decode("latin-1")})
        assert_error(response, 401, "The access token is invalid, expired or revoked")
        assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
        assert response.headers["WWW-Authenticate"].startswith("Bearer realm=")


@pytest.mark.parametrize(
    "path, needed",
    [
        ("/v1/me", "credits:read"),
        ("/v1/me/credits", "credits:read"),
        ("/v1/me/analytics", "analytics:read"),
        (f"/v1/profile/{uid(1, 1)}", "credits:read"),
        (f"/v1/profile/{uid(1, 1)}/credits", "credits:read"),
        (f"/v1/profile/{uid(1, 1)}/charts", "analytics:read"),
    ],
)
def test_missing_scope_is_403_insufficient_scope_naming_the_scope(client, catalog, path, needed):
    granted = " ".join(s for s in ALL_SCOPES.split() if s != needed)
    _, _, token = member_with_token("pro", catalog.mine, scope=granted)
    response = get(client, path, token)
    body = assert_error(response, 403)
    assert needed in body["message"]
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'error="insufficient_scope"' in challenge and f'scope="{needed}"' in challenge


@pytest.mark.parametrize("path", ["/v1/me/analytics", f"/v1/profile/{uid(1, 1)}/charts"])
def test_analytics_on_basic_says_the_plan_does_not_include_it(client, catalog, path):
    # A basic member whose token somehow carries analytics:read (e.g. issued before a downgrade).
    _, _, token = member_with_token("basic", catalog.mine)
    response = get(client, path, token)
    assert_error(response, 403, "Your basic membership plan does not include analytics")
    assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]
    # Credits stay readable on basic.
    assert get(client, "/v1/me/credits", token).status_code == 200


def test_a_downgrade_bites_on_the_next_request_and_an_upgrade_revives_nothing(client, catalog):
    user, app_client, token = member_with_token("pro", catalog.mine)
    assert get(client, "/v1/me/analytics", token).status_code == 200
    set_tier(user, "basic")
    db.session.commit()
    assert_error(get(client, "/v1/me/analytics", token), 403, "Your basic membership plan does not include analytics")
    assert get(client, "/v1/me/credits", token).status_code == 200
    # A token issued on basic carries no analytics:read; upgrading the member does not add it.
    basic_token = mint_token(user, app_client, scope="openid credits:read")
    set_tier(user, "pro")
    db.session.commit()
    response = get(client, "/v1/me/analytics", basic_token)
    assert_error(response, 403)
    assert 'scope="analytics:read"' in response.headers["WWW-Authenticate"]
    # ... nor does it revive the old pro token: the downgrade took analytics out of the grant for
    # good, and reading it again takes a new consent (issue 19).
    assert_error(get(client, "/v1/me/analytics", token), 403)
    assert get(client, "/v1/me/credits", token).status_code == 200


def test_a_token_revoked_after_use_stops_at_once(client, catalog, pro):
    assert get(client, "/v1/me", pro[2]).status_code == 200
    row = db.session.scalar(db.select(Token).where(Token.user_id == pro[0].id))
    row.revoked_at = utcnow()
    db.session.commit()
    assert_error(get(client, "/v1/me", pro[2]), 401)


def test_reads_change_nothing(client, catalog, pro):
    before = db_state()
    for path in [*ROUTES, "/v1/me/credits?limit=51", f"/v1/profile/{catalog.other}", "/v1/nope"]:
        get(client, path, pro[2])
    assert db_state() == before


# -- bad input and routing -------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["post", "put", "delete", "patch"])
def test_wrong_method_is_405_in_the_envelope(client, pro, method):
    response = getattr(client, method)("/v1/me", headers=bearer(pro[2]))
    assert_error(response, 405, "Method not allowed")
    assert set(response.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS"}  # RFC 9110 15.5.6


@pytest.mark.parametrize("path", ["/v1", "/v1/", "/v1/nope", "/v1/me/nope", "/v1/profile", "/v1/%E2%82%AC"])
def test_unknown_paths_are_404_in_the_envelope(client, pro, path):
    response = get(client, path, pro[2])
    assert_error(response, 404, "Not found")
    assert response.headers["X-Request-Id"] and response.headers["x-service-version"]


def test_a_crash_is_a_500_in_the_envelope_without_details(client, catalog, pro, monkeypatch):
    from app.web.api import reads

    def boom(*a, **kw):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(reads, "chart_rows", boom)
    response = get(client, "/v1/me/analytics", pro[2])
    body = assert_error(response, 500, "Internal error")
    assert "secret" not in response.get_data(as_text=True) and body


def test_a_disabled_app_is_checked_on_each_request(client, catalog, pro):
    assert get(client, "/v1/me", pro[2]).status_code == 200
    app_client = db.session.get(Client, pro[1].id)
    app_client.status = "disabled"
    db.session.commit()
    assert_error(get(client, "/v1/me", pro[2]), 401)
