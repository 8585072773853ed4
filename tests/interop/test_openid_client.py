"""Interop with openid-client 6 (Node), through examples/clients/openid_client.mjs — the same file
docs/integrating.md shows. `make test` installs the pinned version from examples/clients/
package-lock.json into examples/clients/node_modules (git-ignored)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.interop.conftest import SCOPE, front_channel, tool_unavailable

DRIVER = Path(__file__).with_name("node_driver.mjs")
PACKAGE = ROOT / "examples" / "clients" / "node_modules" / "openid-client" / "package.json"


@pytest.fixture(scope="module")
def node() -> str:
    path = shutil.which("node")
    if path is None:
        tool_unavailable("Node.js (20+) is not installed: the openid-client interop test needs `node`")
    if not PACKAGE.exists():
        tool_unavailable("openid-client is not installed: run `make test-tools` (npm ci --prefix examples/clients)")
    version = json.loads(PACKAGE.read_text())["version"]
    assert version.startswith("6."), f"openid-client {version} installed; the lock file pins 6.x"
    return path


def step(node: str, name: str, request: dict, expect_error: bool = False) -> dict:
    run = subprocess.run(
        [node, str(DRIVER), name], input=json.dumps(request), capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert run.stdout, f"node printed nothing (exit {run.returncode}): {run.stderr[-2000:]}"
    answer = json.loads(run.stdout)
    if expect_error:
        assert run.returncode == 2 and "error" in answer, answer
    else:
        assert run.returncode == 0, f"{answer} {run.stderr[-2000:]}"
    return answer


def base_request(setup) -> dict:
    return {
        "issuer": setup.base,
        "clientId": setup.client_id,
        "clientSecret": setup.client_secret,
        "redirectUri": setup.redirect_uri,
        "scope": SCOPE,
    }


def test_sign_in_userinfo_and_refresh(node, setup, app):
    req = base_request(setup)
    started = step(node, "start", req)
    assert "code_challenge_method=S256" in started["url"]
    callback = front_channel(setup.base, started["url"], setup.email)

    done = step(node, "finish", {**req, "callbackUrl": callback, "pending": started["pending"]})
    member, claims = setup.member, done["claims"]
    assert claims["iss"] == setup.base and claims["aud"] == setup.client_id
    assert claims["sub"] == member.sub and claims["nonce"] == started["pending"]["nonce"]
    assert claims[app.config["USER_ID_CLAIM"]] == member.id and claims["email"] == member.email
    assert claims["auth_time"] <= time.time() + 5
    assert done["tokens"]["scope"].split() == SCOPE.split()
    assert done["userinfo"]["sub"] == member.sub and done["userinfo"]["name"] == "Parker Pro"

    first_refresh = done["tokens"]["refresh_token"]
    renewed = step(node, "refresh", {**req, "refreshToken": first_refresh})
    assert renewed["tokens"]["access_token"] != done["tokens"]["access_token"]
    assert renewed["tokens"]["refresh_token"] != first_refresh
    assert renewed["claims"]["sub"] == member.sub and renewed["claims"]["auth_time"] == claims["auth_time"]

    # The spent refresh token: openid-client surfaces the provider's invalid_grant.
    reuse = step(node, "refresh", {**req, "refreshToken": first_refresh}, expect_error=True)
    assert reuse["error"] == "invalid_grant", reuse


def test_openid_client_refuses_a_wrong_state_and_a_wrong_nonce(node, setup):
    req = base_request(setup)
    started = step(node, "start", req)
    callback = front_channel(setup.base, started["url"], setup.email)

    wrong_state = step(
        node,
        "finish",
        {**req, "callbackUrl": callback, "pending": {**started["pending"], "state": "not-the-state"}},
        expect_error=True,
    )
    assert "state" in wrong_state["message"], wrong_state

    wrong_nonce = step(
        node,
        "finish",
        {**req, "callbackUrl": callback, "pending": {**started["pending"], "nonce": "not-the-nonce"}},
        expect_error=True,
    )
    assert "nonce" in wrong_nonce["message"], wrong_nonce


def test_openid_client_sees_access_denied(node, setup):
    req = base_request(setup)
    started = step(node, "start", req)
    callback = front_channel(setup.base, started["url"], setup.email, allow=False)
    denied = step(node, "finish", {**req, "callbackUrl": callback, "pending": started["pending"]}, expect_error=True)
    assert denied["error"] == "access_denied", denied
