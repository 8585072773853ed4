"""The OpenAPI document says exactly what the server accepts (issue 50, item 17): for each tricky
input, the document's verdict (openapi-core's request validation, plus the `x-query-schema` that
ties profile search's parameters together) and the server's (400 or not) are the same - so a
generated client or a fuzzer working from the document agrees with the server."""

from __future__ import annotations

import json
import re

import pytest
from jsonschema import Draft202012Validator
from openapi_core import OpenAPI
from openapi_core.testing import MockRequest

from app.core.extensions import limiter
from app.web.api import catalog as catalog_rules
from app.web.api.openapi import openapi_document
from tests.api_support import make_catalog, uid
from tests.key_support import index_catalog, key_header, make_key

BLANKS = [" ", "\t", "\n", "\x1c", "\x85", "\xa0", "\u2003", "\u3000", " \u2028 "]
VISIBLE = ["a", " a ", "\ufeff", "é", "x" * 200, "\u200b"]  # U+FEFF and U+200B are not whitespace to either


@pytest.fixture(scope="module")
def spec():
    return OpenAPI.from_dict(openapi_document())


@pytest.fixture
def world(app):
    limiter.reset()
    make_catalog(credits=10)
    index_catalog()
    return app.test_client(), key_header(make_key("secret")[1])


def document_accepts(spec, method: str, path: str, args: dict | None = None, body: object = None) -> bool:
    request = MockRequest(
        "http://localhost",
        method,
        path,
        args=args or {},
        headers={"x-api-key": "msk_any"},  # the door is not what is compared here
        data=json.dumps(body) if body is not None else None,
        content_type="application/json" if body is not None else None,
    )
    try:
        spec.validate_request(request)
    except Exception:
        return False
    operation = openapi_document()["paths"][path.replace(uid(1, 1), "{id}")][method]
    if "x-query-schema" in operation:
        return Draft202012Validator(operation["x-query-schema"]).is_valid(args or {})
    return True


def server_accepts(world, method: str, path: str, args: dict | None = None, body: object = None) -> bool:
    client, headers = world
    response = getattr(client, method)(path, query_string=args or {}, json=body, headers=headers)
    assert response.status_code in (200, 400, 404), response.get_data(as_text=True)
    return response.status_code != 400


@pytest.mark.parametrize("text", BLANKS + VISIBLE + ["", "x" * 201], ids=repr)
def test_autocomplete_q(spec, world, text):
    args = {"q": text}
    assert document_accepts(spec, "get", "/v1/search/autocomplete", args) == server_accepts(
        world, "get", "/v1/search/autocomplete", args
    )


@pytest.mark.parametrize("text", BLANKS + VISIBLE + ["", "x" * 201], ids=repr)
def test_search_keyword(spec, world, text):
    body = {"keyword": text}
    assert document_accepts(spec, "post", "/v1/search", body=body) == server_accepts(
        world, "post", "/v1/search", body=body
    )


@pytest.mark.parametrize(
    "args",
    [
        {"names": "ada", "track_ids": uid(2, 2)},
        {"names": "ada", "spotify_track_ids": "sp1"},
        {"names": "ada", "track_ids": "", "spotify_track_ids": "sp1"},
        {"names": "ada"},
        {"track_ids": uid(2, 2)},
        {"names": " , ", "track_ids": uid(2, 2)},
        {"names": "", "track_ids": uid(2, 2)},
        {"names": "\u3000", "track_ids": uid(2, 2)},
        {"names": " ada ,", "track_ids": " , "},
        {"names": ",ada", "spotify_track_ids": ","},
        {"names": "ada", "track_ids": ",x,"},
    ],
    ids=repr,
)
def test_profile_search_names_and_track_ids(spec, world, args):
    assert document_accepts(spec, "get", "/v1/profiles/search", args) == server_accepts(
        world, "get", "/v1/profiles/search", args
    )


@pytest.mark.parametrize("offset", ["0", "5", "999999999999999999", "1000000000000000000", "-1"])
def test_offset_has_the_servers_maximum(spec, world, offset):
    path = f"/v1/profile/{uid(1, 1)}/credits"
    args = {"offset": offset}
    assert document_accepts(spec, "get", "/v1/profile/{id}/credits".replace("{id}", uid(1, 1)), args) == (
        server_accepts(world, "get", path, args)
    )


def test_the_patterns_are_the_servers_own():
    document = openapi_document()
    q = document["paths"]["/v1/search/autocomplete"]["get"]["parameters"][0]["schema"]
    assert q["pattern"] == catalog_rules.VISIBLE_TEXT and (q["minLength"], q["maxLength"]) == (1, 200)
    assert (
        document["components"]["schemas"]["SearchRequest"]["properties"]["keyword"]["pattern"]
        == catalog_rules.VISIBLE_TEXT
    )
    search = document["paths"]["/v1/profiles/search"]["get"]
    assert search["x-query-schema"]["properties"]["names"]["pattern"] == catalog_rules.LISTED_TEXT
    assert document["components"]["parameters"]["offset"]["schema"]["maximum"] == catalog_rules.MAX_OFFSET
    # The whitespace spelled out is exactly Python's (what the server's strip() removes).
    assert all((re.fullmatch(catalog_rules.VISIBLE_TEXT, chr(c)) is None) == chr(c).isspace() for c in range(1, 0x3001))


def test_the_search_buckets_release_date_has_one_format(world, spec):
    client, headers = world
    tracks = client.post("/v1/search", json={"keyword": "track", "type": ["track"]}, headers=headers).get_json()
    pattern = openapi_document()["components"]["schemas"]["SearchTrack"]["properties"]["releaseDate"]["pattern"]
    dates = [t["releaseDate"] for t in tracks["data"]["tracks"]["items"]]
    assert dates and all(d is None or re.fullmatch(pattern, d) for d in dates), dates
