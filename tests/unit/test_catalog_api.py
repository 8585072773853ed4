"""The catalog API behind the key door (`/v1` with `x-api-key`), through the Flask test client:
every operation of the spec's table, its paging, envelope and API error messages."""

from __future__ import annotations

import pytest

from tests.api_support import make_catalog, uid
from tests.key_support import index_catalog, key_header, make_key

pytestmark = pytest.mark.usefixtures("fresh_budgets")  # tests/conftest.py


@pytest.fixture
def catalog():
    made = make_catalog(credits=45)
    index_catalog()
    return made


@pytest.fixture
def secret():
    return make_key("secret")[1]


def ok_data(response):
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_json()
    assert body["result"] == "ok" and body["code"] == 200 and set(body) == {"result", "code", "data"}
    return body["data"]


def assert_api_error(response, status, message, param=None):
    """The spec's envelope, with the offending input in `param` when one is to blame."""
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    named = body.pop("param", None)
    assert body == {"result": "error", "code": status, "message": message}
    if param is not None:
        assert named == param, body


def test_any_profile_with_its_credits_and_charts(client, catalog, secret):
    h = key_header(secret)
    other = ok_data(client.get(f"/v1/profile/{catalog.other}", headers=h))
    assert other["id"] == catalog.other and other["name"] == "Otto Other"
    page = ok_data(client.get(f"/v1/profile/{catalog.other}/credits?limit=2", headers=h))
    assert (page["limit"], page["offset"], page["totalCount"], len(page["items"])) == (2, 0, 3, 2)
    charts = ok_data(client.get(f"/v1/profile/{catalog.other}/charts", headers=h))
    assert [c["score"] for c in charts] == [5000]
    # Past the end: 200 with no items; a cursor is ignored; an Idempotency-Key has no effect.
    past = ok_data(
        client.get(
            f"/v1/profile/{catalog.mine}/credits?offset=45&cursor=abc",
            headers=key_header(secret, **{"Idempotency-Key": "x"}),
        )
    )
    assert past == {"limit": 20, "offset": 45, "totalCount": 45, "items": []}


def test_collaborators_are_the_profiles_with_most_shared_tracks(client, catalog, secret):
    page = ok_data(client.get(f"/v1/profile/{catalog.mine}/collaborators", headers=key_header(secret)))
    # `other` is credited on no track of `mine` (credits are on distinct tracks): no collaborators.
    assert page == {"limit": 20, "offset": 0, "totalCount": 0, "items": []}


def test_collaborators_count_shared_tracks(client, catalog, secret):
    from app.core.extensions import db
    from app.models import Credit

    # `other` credited on two of `mine`'s tracks.
    rows = db.session.scalars(db.select(Credit).where(Credit.profile_id == catalog.mine).order_by(Credit.id).limit(2))
    for n, credit in enumerate(list(rows)):
        db.session.add(
            Credit(
                id=1000 + n,
                profile_id=catalog.other,
                track_id=credit.track_id,
                album_id=credit.album_id,
                release_date=credit.release_date,
            )
        )
    db.session.commit()
    page = ok_data(client.get(f"/v1/profile/{catalog.mine}/collaborators", headers=key_header(secret)))
    assert page["totalCount"] == 1
    assert page["items"] == [{"id": catalog.other, "name": "Otto Other", "avatarUrl": None, "sharedCredits": 2}]


@pytest.mark.parametrize("id_key, value", [("id", uid(1, 2)), ("isrc", "USAAA2000000"), ("spotify", "sp0")])
def test_track_by_each_identifier(client, catalog, secret, id_key, value):
    track = ok_data(client.get(f"/v1/track/{id_key}/{value}", headers=key_header(secret)))
    assert track["id"] == uid(1, 2) and track["title"] == "Track 0"
    assert track["isrcs"] == ["USAAA2000000"] and track["spotifyIds"] == ["sp0"] and track["label"] == "Label"
    albums = ok_data(client.get(f"/v1/track/{id_key}/{value}/albums", headers=key_header(secret)))
    assert albums["totalCount"] == 1
    assert albums["items"] == [{"id": uid(1, 3), "title": "Album 0", "releaseDate": "2020-01-01", "popularity": 0}]


@pytest.mark.parametrize("id_key, value", [("id", uid(1, 3)), ("upc", "000000000000"), ("spotify", "alb0")])
def test_album_by_each_identifier_and_its_credits(client, catalog, secret, id_key, value):
    album = ok_data(client.get(f"/v1/album/{id_key}/{value}", headers=key_header(secret)))
    assert album["id"] == uid(1, 3) and album["upc"] == "000000000000" and album["label"] == "Label"
    credits = ok_data(client.get(f"/v1/album/{id_key}/{value}/credits", headers=key_header(secret)))
    assert credits["totalCount"] == 1
    row = credits["items"][0]
    assert row["profile"]["id"] == catalog.other or row["profile"]["id"] == catalog.mine
    assert row["track"]["id"] == uid(1, 2)
    assert {r["child"] for r in row["credits"]} == {"Co-Producer", "Composer"}


@pytest.mark.parametrize(
    "path",
    [
        "/v1/track/id/not-a-uuid",
        f"/v1/track/id/{uid(999, 2)}",
        "/v1/track/isrc/XX0000000000",
        "/v1/track/spotify/none",
        "/v1/track/upc/000000000000",
        "/v1/track/name/x",
        f"/v1/track/id/{uid(999, 2)}/albums",
        "/v1/album/isrc/USAAA2000000",
        "/v1/album/upc/999",
        f"/v1/album/id/{uid(999, 3)}/credits",
        "/v1/album/spotify/zz",
        f"/v1/profile/{uid(999, 1)}",
        "/v1/profile/nope/credits",
        f"/v1/profile/{uid(999, 1)}/charts",
        f"/v1/profile/{uid(999, 1)}/collaborators",
        "/v1/track/isrc/" + "U" * 65,
        "/v1/album/spotify/%20",
    ],
)
def test_an_unmatched_identifier_is_404_not_found(client, catalog, secret, path):
    assert_api_error(client.get(path, headers=key_header(secret)), 404, "Not found")


def test_a_nul_byte_anywhere_is_400_never_a_5xx(client, catalog, secret):
    for path in ("/v1/track/spotify/sp%00", "/v1/album/upc/0%000", "/v1/search/autocomplete?q=a%00"):
        assert_api_error(client.get(path, headers=key_header(secret)), 400, "Invalid parameters supplied")
    response = client.post("/v1/search", json={"keyword": "a\x00b"}, headers=key_header(secret))
    assert_api_error(response, 400, "Invalid parameters supplied")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/profile/{mine}/credits",
        "/v1/profile/{mine}/collaborators",
        "/v1/track/id/{track}/albums",
        "/v1/album/id/{album}/credits",
    ],
)
def test_paging_rules_on_every_list(client, catalog, secret, path):
    path = path.format(mine=catalog.mine, track=uid(1, 2), album=uid(1, 3))
    h = key_header(secret)
    assert_api_error(client.get(path + "?limit=51", headers=h), 400, "Too big page, max page size is 50")
    assert_api_error(
        client.get(path + "?limit=99999999999999999999999", headers=h), 400, "Too big page, max page size is 50"
    )
    for bad in ("limit=0", "limit=abc", "offset=-1", "offset=x", "limit=5&limit=6"):
        assert_api_error(client.get(f"{path}?{bad}", headers=h), 400, "Invalid parameters supplied")
    assert ok_data(client.get(path + "?limit=50&offset=0", headers=h))["limit"] == 50


def test_roles_is_the_whole_taxonomy_as_a_page(client, catalog, secret):
    page = ok_data(client.get("/v1/roles?limit=1", headers=key_header(secret)))
    assert page == {
        "limit": 3,
        "offset": 0,
        "totalCount": 3,
        "items": [
            {"child": "Co-Producer", "parent": "Producer"},
            {"child": "Composer", "parent": "Songwriter"},
            {"child": "Lyricist", "parent": "Songwriter"},
        ],
    }


def test_search_groups_results_and_leaves_unasked_buckets_empty(client, catalog, secret):
    h = key_header(secret)
    everything = ok_data(client.post("/v1/search", json={"keyword": "otto"}, headers=h))
    assert set(everything) == {"tracks", "albums", "profiles"}
    assert everything["profiles"]["total"] == 1
    person = everything["profiles"]["items"][0]
    assert person["id"] == catalog.other and person["creditCount"] == 3
    assert set(person) == {
        "id",
        "name",
        "popularity",
        "creditCount",
        "collaboratorsCount",
        "avatarUrl",
        "commonCredits",
    }
    tracks_only = ok_data(client.post("/v1/search", json={"keyword": "Track 1", "type": ["track"]}, headers=h))
    assert tracks_only["profiles"] == {"total": 0, "items": []} and tracks_only["albums"] == {"total": 0, "items": []}
    assert tracks_only["tracks"]["total"] == 11  # Track 1, Track 10..19
    item = tracks_only["tracks"]["items"][0]
    assert set(item) == {"id", "title", "popularity", "releaseDate"} and "T" in item["releaseDate"]
    # LIKE wildcards (and the escape character) are matched literally.
    for literal in ("%", "_", "!", "!%", "\\"):
        found = ok_data(client.post("/v1/search", json={"keyword": literal}, headers=h))
        assert (found["tracks"]["total"], found["albums"]["total"], found["profiles"]["total"]) == (0, 0, 0), literal
    assert ok_data(client.get("/v1/search/autocomplete?q=%25", headers=h))["items"] == []


@pytest.mark.parametrize(
    "body",
    [
        None,
        "not json",
        [],
        {},
        {"keyword": ""},
        {"keyword": "  "},
        {"keyword": 5},
        {"keyword": "a", "type": "track"},
        {"keyword": "a", "type": ["song"]},
        {"keyword": "a", "type": [1]},
        {"keyword": "x" * 201},
    ],
)
def test_search_with_a_missing_or_invalid_body_is_400(client, catalog, secret, body):
    kwargs = (
        {"data": body, "content_type": "application/json"}
        if isinstance(body, str)
        else ({} if body is None else {"json": body})
    )
    response = client.post("/v1/search", headers=key_header(secret), **kwargs)
    assert_api_error(response, 400, "Invalid parameters supplied")


def test_autocomplete(client, catalog, secret):
    h = key_header(secret)
    items = ok_data(client.get("/v1/search/autocomplete?q=ott", headers=h))["items"]
    assert items == [{"id": catalog.other, "name": "Otto Other", "entityType": "profile"}]
    mixed = ok_data(client.get("/v1/search/autocomplete?q=a", headers=h))["items"]
    assert {i["entityType"] for i in mixed} == {"profile", "album"} and len(mixed) == 10
    for bad in ("", "?q=", "?q=%20", "?q=a&q=b", "?q=" + "x" * 201):
        assert_api_error(client.get("/v1/search/autocomplete" + bad, headers=h), 400, "Invalid parameters supplied")


def test_profile_search_for_known_tracks(client, catalog, secret):
    h = key_header(secret)
    found = ok_data(client.get(f"/v1/profiles/search?names=ada,nobody&track_ids={uid(2, 2)}", headers=h))
    assert found == {
        "items": [
            {
                "id": catalog.mine,
                "name": "Ada Mine",
                "avatarUrl": "https://images.credits.example/profiles/ada.jpg",
                "trackIds": [uid(2, 2)],
            }
        ]
    }
    by_spotify = ok_data(client.get("/v1/profiles/search?names=Ada&spotify_track_ids=sp1", headers=h))
    assert [p["id"] for p in by_spotify["items"]] == [catalog.mine]
    for bad in ("", "?names=ada", f"?track_ids={uid(2, 2)}", "?names=&track_ids=x"):
        assert_api_error(client.get("/v1/profiles/search" + bad, headers=h), 400, "Invalid parameters supplied")


def test_key_door_pages_cost_a_fixed_number_of_queries(client, catalog, secret):
    """Whatever the page size: the key lookup, the meter's upsert and its commit, then the reads
    (the owner's billing standing is read at the first request, then kept: a warm-up pays it)."""
    from tests.api_support import count_queries

    client.get("/v1/roles", headers=key_header(secret))

    def queries(method, path, **kw):
        with count_queries() as statements:
            response = getattr(client, method)(path, headers=key_header(secret), **kw)
        assert response.status_code == 200, response.get_data(as_text=True)
        return len(statements)

    for path in (
        f"/v1/profile/{catalog.mine}/credits",
        f"/v1/album/id/{uid(1, 3)}/credits",
        f"/v1/profile/{catalog.mine}/collaborators",
        f"/v1/track/id/{uid(1, 2)}/albums",
    ):
        assert queries("get", path + "?limit=1") == queries("get", path + "?limit=50"), path
    # Search: a count and a page per bucket, and the profile bucket's statistics, for ten rows at most.
    assert queries("post", "/v1/search", json={"keyword": "a"}) <= 14
    # A track by its ISRC is one read, as by its id: the ISRC index gives the id inside the statement.
    assert queries("get", "/v1/track/isrc/USAAA2000000") == queries("get", f"/v1/track/id/{uid(1, 2)}")


def test_a_browser_may_preflight_the_widget_api(client, catalog):
    response = client.options(
        f"/embed/v1/profile/{catalog.mine}",
        headers={
            "Origin": "https://widgets.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "x-api-key",
        },
    )
    assert response.status_code == 200
    assert "x-api-key" in response.headers["Access-Control-Allow-Headers"]
    assert response.headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message", "param"),
    [
        ("get", "/v1/profile/{mine}/credits?limit=51", None, 400, "Too big page, max page size is 50", "limit"),
        ("get", "/v1/profile/{mine}/credits?limit=abc", None, 400, "Invalid parameters supplied", "limit"),
        ("get", "/v1/profile/{mine}/credits?limit=5&limit=6", None, 400, "Invalid parameters supplied", "limit"),
        ("get", "/v1/profile/{mine}/credits?offset=-1", None, 400, "Invalid parameters supplied", "offset"),
        ("get", "/v1/search/autocomplete?q=%20", None, 400, "Invalid parameters supplied", "q"),
        ("get", "/v1/search/autocomplete", None, 400, "Invalid parameters supplied", "q"),
        ("get", "/v1/profiles/search?track_ids=x", None, 400, "Invalid parameters supplied", "names"),
        ("get", "/v1/profiles/search?names=ada", None, 400, "Invalid parameters supplied", "track_ids"),
        (
            "get",
            "/v1/profiles/search?names=ada&track_ids=" + "x" * 201,
            None,
            400,
            "Invalid parameters supplied",
            "track_ids",
        ),
        ("post", "/v1/search", {"keyword": " "}, 400, "Invalid parameters supplied", "keyword"),
        ("post", "/v1/search", {"keyword": "a", "type": ["song"]}, 400, "Invalid parameters supplied", "type"),
        ("post", "/v1/search", [1], 400, "Invalid parameters supplied", "body"),
        ("get", "/v1/track/upc/000000000000", None, 404, "Not found", "idKey"),
        ("get", "/v1/album/isrc/USAAA2000000", None, 404, "Not found", "idKey"),
    ],
)
def test_the_offending_parameter_is_named_beside_the_specs_message(
    client, catalog, secret, method, path, body, status, message, param
):
    """Issue 50, item 8: the messages stay the spec's, word for word; `param` says which input."""
    response = getattr(client, method)(
        path.format(mine=catalog.mine), headers=key_header(secret), **({"json": body} if body is not None else {})
    )
    assert_api_error(response, status, message, param)


def test_no_param_when_no_single_input_is_to_blame(client, catalog, secret):
    for path in ("/v1/track/isrc/XX0000000000", f"/v1/profile/{uid(999, 1)}"):
        body = client.get(path, headers=key_header(secret)).get_json()
        assert body == {"result": "error", "code": 404, "message": "Not found"}


def test_the_access_line_names_the_key_never_its_secret(client, catalog, caplog):
    """Data-use term 7: a call through the key door is traceable to its key - id and clear prefix
    on the access line, with the request id, status and duration; the secret never."""
    import logging

    key, value = make_key("secret")
    with caplog.at_level(logging.INFO, logger="credits_id.access"):
        client.get(f"/v1/profile/{catalog.mine}", headers=key_header(value, **{"X-Request-Id": "trace-47"}))
        client.get(f"/v1/profile/{catalog.mine}", headers=key_header("msk_" + "x" * 40))
    known, unknown = [r for r in caplog.records if r.name == "credits_id.access"]
    assert (known.key_id, known.key_prefix, known.request_id, known.status) == (key.id, key.prefix, "trace-47", 200)
    assert known.latency_ms >= 0 and value.startswith(key.prefix) and len(key.prefix) < len(value)
    assert not hasattr(unknown, "key_id") and unknown.status == 401
    assert value not in caplog.text
