"""Shared pieces of the HTTP tests: a member, a confidential and a public app, their RPs."""

import pytest

from tests.factories import make_client, make_member
from tests.flows import RelyingParty


@pytest.fixture
def member():
    return make_member(tier="basic", name="Bea Basic")


@pytest.fixture
def pro_member():
    return make_member(tier="pro", name="Pat Pro")


@pytest.fixture
def rp(live_server):
    client, secret = make_client()
    return RelyingParty(live_server.url, client.client_id, secret)


@pytest.fixture
def public_rp(live_server):
    client, _ = make_client(public=True)
    return RelyingParty(live_server.url, client.client_id, None)
