"""The docs say what is true: the code samples in docs/integrating.md are the very files the
interop tests run, the errors and headers it promises are the ones the server sends, and
docs/operating.md names every setting."""

from __future__ import annotations

import re

import pytest
import requests

from app.core.config import DEFAULTS
from tests.conftest import ROOT
from tests.flows import TOKEN, USERINFO
from tests.interop.conftest import SCOPE

INTEGRATING = ROOT / "docs" / "integrating.md"
OPERATING = ROOT / "docs" / "operating.md"
SAMPLE = re.compile(r"<!-- sample: (?P<path>\S+) -->\n```\w+\n(?P<code>.*?)\n```", re.S)


def test_every_code_sample_in_integrating_md_is_a_file_the_interop_tests_run():
    samples = {m["path"]: m["code"] for m in SAMPLE.finditer(INTEGRATING.read_text())}
    assert set(samples) == {"examples/clients/authlib_client.py", "examples/clients/openid_client.mjs"}
    for path, code in samples.items():
        assert code == (ROOT / path).read_text().rstrip("\n"), (
            f"docs/integrating.md shows an old copy of {path}: paste the file's current text in its block"
        )


def test_integrating_md_lists_every_scope_the_provider_supports(live_server):
    from app.core.scopes import SCOPES

    text = INTEGRATING.read_text()
    for name, scope in SCOPES.items():
        assert f"| `{name}` | {scope.description.split(' (')[0]}" in text, name
    assert set(SCOPE.split()) <= set(SCOPES)


def test_operating_md_names_every_setting():
    text = OPERATING.read_text()
    missing = [name for name in DEFAULTS if f"`{name}`" not in text]
    assert not missing, f"docs/operating.md does not describe these settings: {missing}"


@pytest.mark.parametrize("auth", ["wrong secret", "no secret"])
def test_documented_token_errors(setup, auth):
    credentials = (setup.client_id, "not-the-secret") if auth == "wrong secret" else None
    response = requests.post(
        setup.base + TOKEN,
        data={
            "grant_type": "authorization_code",
            "code": "x",
            "redirect_uri": setup.redirect_uri,
            "code_verifier": "v" * 43,
        },
        auth=credentials,
        timeout=30,
    )
    assert response.status_code == 401 and response.json()["error"] == "invalid_client"
    assert response.headers["Cache-Control"] == "no-store"

    response = requests.post(
        setup.base + TOKEN, data={"grant_type": "password"}, auth=(setup.client_id, setup.client_secret), timeout=30
    )
    assert response.status_code == 400 and response.json()["error"] == "unsupported_grant_type"


def test_documented_userinfo_error_and_cache_headers(live_server):
    response = requests.get(live_server(USERINFO), headers={"Authorization": "Bearer not-a-token"}, timeout=30)
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    for path in ("/.well-known/openid-configuration", "/api/auth/jwks"):
        headers = requests.get(live_server(path), timeout=30).headers
        assert headers["Cache-Control"] == "public, max-age=300" and headers["ETag"]
