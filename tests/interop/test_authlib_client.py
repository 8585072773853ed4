"""Interop with Authlib's OAuth 2 client (requests), through examples/clients/authlib_client.py —
the same file docs/integrating.md shows. The library drives the flow from discovery alone."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import pytest
from authlib.integrations.base_client import OAuthError
from cryptography.hazmat.primitives.asymmetric import rsa
from joserfc import jwt
from joserfc.errors import BadSignatureError, InvalidClaimError
from joserfc.jwk import RSAKey

from app.protocol.jwks import keystore
from examples.clients.authlib_client import CreditsIdClient
from tests.flows import RelyingParty
from tests.interop.conftest import SCOPE, front_channel


def new_client(setup, scope: str = SCOPE) -> CreditsIdClient:
    return CreditsIdClient(setup.base, setup.client_id, setup.client_secret, setup.redirect_uri, scope=scope)


def test_sign_in_userinfo_and_refresh(setup, app):
    rp = new_client(setup)
    url, pending = rp.start()
    sent = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert url.startswith(setup.base + "/api/auth/oauth2/authorize?")
    assert sent["code_challenge_method"] == "S256" and len(sent["code_challenge"]) == 43
    assert sent["nonce"] == pending["nonce"] and sent["state"] == pending["state"]

    token, claims = rp.finish(front_channel(setup.base, url, setup.email), pending)

    member = setup.member
    assert token["token_type"].lower() == "bearer"
    assert token["scope"].split() == SCOPE.split()  # pro: analytics included
    assert claims["iss"] == setup.base and claims["aud"] == setup.client_id
    assert claims["sub"] == member.sub and claims["nonce"] == pending["nonce"]
    assert claims["name"] == "Parker Pro" and claims["email"] == member.email
    assert claims[app.config["USER_ID_CLAIM"]] == member.id
    assert claims["auth_time"] <= time.time() + 5

    info = rp.userinfo()
    assert info["sub"] == member.sub and info["email"] == member.email and info["name"] == "Parker Pro"
    assert info[app.config["USER_ID_CLAIM"]] == member.id

    first_refresh = token["refresh_token"]
    renewed = rp.refresh()
    assert renewed["access_token"] != token["access_token"]
    assert renewed["refresh_token"] != first_refresh  # rotated
    renewed_claims = rp.verify_id_token(renewed, nonce=None)
    assert renewed_claims["sub"] == member.sub and renewed_claims["auth_time"] == claims["auth_time"]
    assert rp.userinfo()["sub"] == member.sub  # the session now uses the new access token

    # The spent refresh token is refused (reuse detection), as any library would see it.
    reuse = RelyingParty(setup.base, setup.client_id, setup.client_secret).refresh(first_refresh)
    assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"


def test_a_basic_member_is_not_granted_analytics(setup, live_server):
    from tests.factories import make_member

    basic = make_member(tier="basic")
    rp = new_client(setup)
    url, pending = rp.start()
    token, claims = rp.finish(front_channel(setup.base, url, basic.email), pending)
    assert "analytics:read" not in token["scope"].split()
    assert claims["sub"] == basic.sub


def test_wrong_code_verifier_is_refused(setup):
    rp = new_client(setup)
    url, pending = rp.start()
    callback = front_channel(setup.base, url, setup.email)
    with pytest.raises(OAuthError) as caught:
        rp.finish(callback, dict(pending, code_verifier="x" * 64))
    assert caught.value.error == "invalid_grant"


def test_the_sample_rejects_a_wrong_nonce_a_forged_token_and_a_foreign_issuer(setup):
    rp = new_client(setup)
    url, pending = rp.start()
    callback = front_channel(setup.base, url, setup.email)

    with pytest.raises(ValueError, match="expected issuer"):
        rp.finish(callback.replace("iss=", "iss=https%3A%2F%2Fevil.example"), pending)
    with pytest.raises(InvalidClaimError):
        rp.finish(callback, dict(pending, nonce="another-nonce"))

    # A token signed by someone else's key under the provider's kid fails the signature check.
    impostor = RSAKey.import_key(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    kid, _ = keystore.signing_key()
    now = int(time.time())
    forged = jwt.encode(
        {"alg": "RS256", "kid": kid},
        {
            "iss": setup.base,
            "aud": setup.client_id,
            "sub": "someone",
            "iat": now,
            "exp": now + 300,
        },
        impostor,
    )
    with pytest.raises(BadSignatureError):
        rp.verify_id_token({"id_token": forged, "access_token": "x"}, nonce=None)
