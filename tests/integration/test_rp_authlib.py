"""An independent relying-party library (Authlib's client) completes the flow from discovery alone:
PKCE S256, ID token validated against the key set, userinfo, refresh."""

import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.flows import Browser, pkce_pair, query


def test_authlib_client_signs_a_member_in(live_server, rp, member, settings):
    metadata = requests.get(live_server("/.well-known/openid-configuration"), timeout=10).json()
    client = OAuth2Session(
        rp.client_id,
        rp.client_secret,
        scope="openid profile email offline_access",
        redirect_uri=rp.redirect_uri,
        code_challenge_method="S256",
    )
    verifier, _ = pkce_pair()
    url, state = client.create_authorization_url(
        metadata["authorization_endpoint"], code_verifier=verifier, nonce="authlib-nonce"
    )

    browser = Browser(live_server.url)
    browser.follow(browser.get(url))
    browser.login(member.email)
    callback = browser.consent()
    location = callback.headers["Location"]
    assert query(location)["state"] == state and query(location)["iss"] == metadata["issuer"]

    token = client.fetch_token(metadata["token_endpoint"], authorization_response=location, code_verifier=verifier)
    keys = KeySet.import_key_set(requests.get(metadata["jwks_uri"], timeout=10).json())
    decoded = jwt.decode(token["id_token"], keys, algorithms=["RS256"])
    claims = CodeIDToken(
        decoded.claims,
        decoded.header,
        options={
            "iss": {"essential": True, "value": metadata["issuer"]},
            "aud": {"essential": True, "value": rp.client_id},
        },
        params={"nonce": "authlib-nonce", "client_id": rp.client_id, "access_token": token["access_token"]},
    )
    claims.validate(leeway=60)  # iss, aud, exp, iat, auth_time, nonce, azp and at_hash checks
    assert claims["iss"] == settings["ISSUER_URL"] and claims["sub"] == member.sub

    userinfo = client.get(metadata["userinfo_endpoint"]).json()
    assert userinfo["sub"] == member.sub and userinfo["email"] == member.email

    refreshed = client.refresh_token(metadata["token_endpoint"])
    assert refreshed["access_token"] != token["access_token"]
    assert client.get(metadata["userinfo_endpoint"]).status_code == 200
