"""The `credits` client's own rules, one function at a time: which addresses may carry the key,
which values are keys, how a refusal becomes an exit code, how Retry-After is read, what text is
safe to print. (The commands themselves are tested as a user runs them: tests/integration/test_cli_client.py.)"""

from __future__ import annotations

import ast
import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
import requests

from credits_cli import api, credentials
from credits_cli.errors import Exit, Failure
from credits_cli.terminal import clean

PACKAGE = Path(api.__file__).parent


@pytest.mark.parametrize(
    "given, root",
    [
        ("http://127.0.0.1:5000/v1", "http://127.0.0.1:5000/v1"),
        ("http://127.0.0.1:5000/v1/", "http://127.0.0.1:5000/v1"),
        ("http://127.0.0.1:5000", "http://127.0.0.1:5000/v1"),
        ("http://localhost:5000/", "http://localhost:5000/v1"),
        ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
        ("https://api.credits.example/v1", "https://api.credits.example/v1"),
        ("https://credits.example/api/v1", "https://credits.example/api/v1"),
    ],
)
def test_an_api_root_is_https_or_loopback_http(given, root):
    assert api.api_root(given) == root


@pytest.mark.parametrize(
    "given",
    [
        "http://api.credits.example/v1",  # the key in clear text across the network
        "http://10.0.0.5/v1",
        "ftp://127.0.0.1/v1",
        "api.credits.example/v1",
        "https:///v1",
        "https://user:pw@api.credits.example/v1",
        "https://api.credits.example/v1?x=1",
        "not a url",
    ],
)
def test_other_addresses_are_usage_errors(given):
    with pytest.raises(Failure) as refused:
        api.api_root(given)
    assert refused.value.exit_code == Exit.USAGE


def test_only_secret_keys_pass_and_no_message_holds_the_value():
    secret = "msk_" + "A" * 43
    assert credentials.checked(f"  {secret}\n", "x") == secret
    for value, words in [
        ("mpk_" + "B" * 43, "publishable"),
        ("C" * 47, "not a secret API key"),
        ("msk_=", "not a secret API key"),
        ("msk_with space" + "D" * 30, "not a secret API key"),
        ("msk_" + "E" * 40 + "\r\nx-injected: 1", "not a secret API key"),
    ]:
        with pytest.raises(Failure) as refused:
            credentials.checked(value, "the key given")
        assert refused.value.exit_code == Exit.REFUSED
        assert words in refused.value.message and value.strip() not in refused.value.message
    assert credentials.visible(secret) == "msk_AAAAAAAA…"


def answer(status: int, body, headers: dict[str, str] | None = None) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response._content = json.dumps(body).encode() if body is not None else b"<html>no</html>"
    response.headers.update(headers or {"Content-Type": "application/json"})
    return response


@pytest.mark.parametrize(
    "status, body, code",
    [
        (400, {"result": "error", "code": 400, "message": "Too big page, max page size is 50"}, Exit.USAGE),
        (401, {"message": "Unauthorized", "request_id": "r1"}, Exit.REFUSED),
        (403, {"message": "You cannot consume this service", "request_id": "r1"}, Exit.REFUSED),
        (404, {"result": "error", "code": 404, "message": "Not found"}, Exit.NOT_FOUND),
        (429, {"message": "API rate limit exceeded: 5 per second for this key", "request_id": "r1"}, Exit.RATE_LIMITED),
        (500, {"result": "error", "code": 500, "message": "Internal error"}, Exit.FAILED),
        (503, {"result": "error", "code": 503, "message": "Service temporarily unavailable"}, Exit.FAILED),
    ],
)
def test_each_refusal_has_its_exit_code_its_message_and_the_request_id(status, body, code):
    failure = api._refusal(answer(status, body, {"X-Gateway-Request-Id": "abc123"}), body, "GET x")
    assert failure.exit_code == code
    assert failure.message == f"{body['message']} (HTTP {status}, request id abc123)"


def test_the_request_id_of_a_gateway_body_serves_when_the_header_is_missing():
    body = {"message": "Unauthorized", "request_id": "from-body"}
    assert api._refusal(answer(401, body), body, "GET x").message == "Unauthorized (HTTP 401, request id from-body)"


def test_an_answer_that_is_not_the_apis_says_what_came_back():
    response = answer(404, None, {"Content-Type": "text/html; charset=utf-8"})
    failure = api._refusal(response, None, "GET https://x.example/roles")
    assert failure.exit_code == Exit.FAILED
    assert failure.message == "unexpected answer to GET https://x.example/roles: HTTP 404 (text/html)"
    assert "/v1" in (failure.hint or "")


def test_server_text_is_printed_without_control_characters():
    failure = api._refusal(
        answer(404, {"message": "Not\x1b[2J found\x07"}), {"message": "Not\x1b[2J found\x07"}, "GET x"
    )
    assert "\x1b" not in failure.message and "\x07" not in failure.message
    assert clean("a\x1b]0;t\x07b\u202ec\td\ne\x9b") == "a\ufffd]0;t\ufffdb\ufffdc\td\ne\ufffd"


def test_retry_after_in_seconds_or_as_a_date():
    assert api._seconds("3") == 3
    assert api._seconds(None) == 1 and api._seconds("soon") == 1
    in_ten = format_datetime(datetime.now(UTC) + timedelta(seconds=10), usegmt=True)
    assert 9 <= api._seconds(in_ten) <= 11
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=10), usegmt=True)
    assert api._seconds(past) == 1


def test_an_identifier_never_changes_the_path():
    assert api.segment("../../me") == "..%2F..%2Fme"
    assert api.segment("a b?c#d") == "a%20b%3Fc%23d"


def test_the_client_never_imports_the_provider():
    """It is a REST client that works installed alone: no module of it imports `app` or `tests`
    (import-linter checks the same, from pyproject.toml)."""
    for module in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not [n for n in names if n.split(".")[0] in ("app", "tests")], (module.name, names)
