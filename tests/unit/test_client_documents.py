"""The fences around reading an agent's Client ID Metadata Document (app/services/client_documents.py):
which URLs may name one, which addresses may be connected to (SSRF), and what a document must say."""

from __future__ import annotations

import json
import socket

import pytest

from app.services.client_documents import (
    DocumentFetcher,
    DocumentRefused,
    check_client_id_url,
    parse_document,
    permitted_address,
)

URL = "https://agent.example.test/client.json"


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.9.9.9",
        "::1",
        "10.0.0.7",
        "172.16.3.4",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "fe80::1",
        "fc00::1",
        "100.64.0.1",  # shared address space
        "0.0.0.0",
        "::",
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "::ffff:10.0.0.1",
        "224.0.0.1",
        "240.0.0.1",
        "192.0.2.10",  # documentation
    ],
)
def test_private_loopback_link_local_and_reserved_addresses_are_never_fetched(address):
    assert not permitted_address(address, allow_private=False)
    assert permitted_address(address, allow_private=True)  # development's agents on this machine


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700:4700::1111", "8.8.8.8"])
def test_public_addresses_are(address):
    assert permitted_address(address, allow_private=False)


def test_a_host_that_resolves_to_a_private_address_is_refused_before_any_connection(monkeypatch):
    connected = []
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", 443)),
                         (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", 443))],
    )  # fmt: skip
    monkeypatch.setattr(DocumentFetcher, "_get", lambda *a: connected.append(a))
    with pytest.raises(DocumentRefused, match="private or reserved address"):
        DocumentFetcher().fetch(URL)
    assert connected == []  # one bad address among good ones is enough


def test_loopback_names_are_refused_outside_development():
    with pytest.raises(DocumentRefused, match="private or reserved"):
        DocumentFetcher(allow_private=False, timeout=1).fetch("https://localhost:9/client.json")
    with pytest.raises(DocumentRefused, match="private or reserved"):
        DocumentFetcher(allow_private=False, timeout=1).fetch("https://169.254.169.254/latest/meta-data")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://agent.example.test/client.json", "https"),
        ("https://agent.example.test", "path"),
        ("https://agent.example.test/", "path"),
        ("https://agent.example.test/a/../client.json", "segments"),
        ("https://agent.example.test/client.json#x", "fragment"),
        ("https://agent.example.test/client.json?v=1", "query"),
        ("https://user:pw@agent.example.test/client.json", "user information"),
        ("https://agent.example.test:99999/client.json", "valid URL"),
        ("https://agent.example.test/" + "a" * 300, "longer than 255"),
        ("https://agent.example.test/cli ent.json", "ASCII"),
        ("ftp://agent.example.test/client.json", "https"),
    ],
)
def test_client_id_urls_that_cannot_name_a_document(url, says):
    with pytest.raises(DocumentRefused, match=says):
        check_client_id_url(url, development=False)


def test_http_on_loopback_is_for_development_only():
    assert check_client_id_url("http://127.0.0.1:8000/agent.json", development=True)[0] == "http"
    with pytest.raises(DocumentRefused):
        check_client_id_url("http://127.0.0.1:8000/agent.json", development=False)
    with pytest.raises(DocumentRefused):
        check_client_id_url("http://agent.example.test/agent.json", development=True)


def document(**changes) -> bytes:
    body = {"client_id": URL, "client_name": "Agent", "redirect_uris": ["http://127.0.0.1:3000/cb"], **changes}
    return json.dumps({k: v for k, v in body.items() if v is not None}).encode()


def test_a_valid_document():
    agent = parse_document(URL, document(scope="openid credits:read bogus", client_uri="https://agent.example.test"))
    assert agent.name == "Agent" and agent.redirect_uris == ["http://127.0.0.1:3000/cb"]
    assert agent.scope == "openid credits:read" and agent.homepage_url == "https://agent.example.test"
    unnamed = parse_document(URL, document(client_name=None, client_uri="javascript:alert(1)"))
    assert unnamed.name == "agent.example.test" and unnamed.homepage_url is None


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"[]", "JSON object"),
        (b"\xff", "not JSON"),
        (document(client_id="https://other.example.test/client.json"), "equal the URL"),
        (document(redirect_uris=[]), "1 to 10"),
        (document(redirect_uris=["https://a.test/cb"] * 11), "1 to 10"),
        (document(redirect_uris=["http://evil.example.test/cb"]), "https"),
        (document(redirect_uris=["https://a.test/cb#frag"]), "fragment"),
        (document(redirect_uris=["javascript:alert(1)"]), "absolute"),
        (document(redirect_uris=[7]), "string"),
        (document(token_endpoint_auth_method="client_secret_post"), "public clients"),
        (document(grant_types=["client_credentials"]), "grant_types"),
        (document(response_types=["token"]), "response_types"),
        (document(client_name="x" * 121), "client_name"),
        (document(client_name="a\nb"), "client_name"),
    ],
)
def test_documents_that_do_not_check_out(body, says):
    with pytest.raises(DocumentRefused, match=says):
        parse_document(URL, body)
