import pytest

from app.models import Client
from app.services.registration import NewClient, RegistrationError, redirect_uri_problem, register_client


@pytest.mark.parametrize(
    "uri",
    [
        "https://app.example.com/callback",
        "https://app.example.com:8443/cb?x=1",
        "http://127.0.0.1:7199/cb",
        "http://localhost/cb",
        "http://[::1]:8080/cb",
        "com.example.app:/callback",
        "com.example.app:/oauth2redirect",
    ],
)
def test_acceptable_redirect_uris(uri):
    assert redirect_uri_problem(uri) is None


@pytest.mark.parametrize(
    "uri,why",
    [
        ("/relative/path", "absolute"),
        ("https://app.example.com/cb#frag", "fragment"),
        ("https://user:pw@app.example.com/cb", "user name"),
        ("https://*.example.com/cb", "wildcard"),
        ("http://app.example.com/cb", "https"),
        ("javascript:alert(1)", "private-use"),
        ("myapp:/cb", "reverse-DNS"),
        ("https://app.example.com/c b", "spaces"),
        ("", "empty"),
    ],
)
def test_rejected_redirect_uris_say_why(uri, why):
    problem = redirect_uri_problem(uri)
    assert problem is not None and why in problem


@pytest.mark.parametrize("uri", ["http://localhost/cb", "http://LOCALHOST/cb"])
def test_a_public_app_names_the_loopback_address_not_localhost(uri):
    """RFC 8252 8.3: `localhost` may resolve elsewhere or be served by another listener; without a
    port it would also claim every port (the loopback rule), so it is refused."""
    problem = redirect_uri_problem(uri, public=True)
    assert problem is not None and "127.0.0.1 or [::1], not localhost" in problem
    assert redirect_uri_problem("http://127.0.0.1/cb", public=True) is None
    assert redirect_uri_problem("http://[::1]/cb", public=True) is None
    with pytest.raises(RegistrationError, match="not localhost"):
        register_client(NewClient(name="Native", public=True, redirect_uris=[uri]))


@pytest.mark.parametrize(
    "uri", ["http://localhost:3000/callback", "http://localhost:5173/", "http://LOCALHOST:8080/cb"]
)
def test_a_public_app_may_register_localhost_with_a_port_for_development(uri):
    """Issue 50, item 16: a single-page app on a dev server registers its exact localhost address;
    it matches exactly (no other port), unlike a loopback IP registered without a port."""
    assert redirect_uri_problem(uri, public=True) is None
    client, _ = register_client(NewClient(name="SPA in development", public=True, redirect_uris=[uri]))
    assert client.check_redirect_uri(uri)
    port = uri.split(":")[2].split("/")[0]
    assert not client.check_redirect_uri(uri.replace(port, str(int(port) + 1)))
    assert not client.check_redirect_uri(uri.replace("localhost", "127.0.0.1").replace("LOCALHOST", "127.0.0.1"))


def test_register_names_each_bad_uri_and_writes_nothing():
    with pytest.raises(RegistrationError) as err:
        register_client(
            NewClient(
                name="X", redirect_uris=["https://ok.example/cb", "http://evil.example/cb", "https://a.example/#x"]
            )
        )
    message = str(err.value)
    assert "http://evil.example/cb" in message and "https://a.example/#x" in message
    assert Client.query.count() == 0


def test_confidential_client_secret_is_stored_hashed():
    client, secret = register_client(NewClient(name="App", redirect_uris=["https://a.example/cb"]))
    assert secret and len(secret) >= 40
    assert client.client_secret_hash != secret and secret not in client.client_secret_hash
    assert client.check_client_secret(secret)
    assert not client.check_client_secret(secret + "x")
    assert client.token_endpoint_auth_method == "client_secret_basic"


def test_public_client_has_no_secret_and_authenticates_with_none():
    client, secret = register_client(NewClient(name="Native", redirect_uris=["com.example.app:/cb"], public=True))
    assert secret is None and client.client_secret_hash is None
    assert client.check_endpoint_auth_method("none", "token")
    assert not client.check_endpoint_auth_method("client_secret_basic", "token")


def test_pkce_cannot_be_relaxed_for_public_clients():
    with pytest.raises(RegistrationError, match="PKCE"):
        register_client(NewClient(name="N", redirect_uris=["com.example.app:/cb"], public=True, require_pkce=False))


def test_client_ids_are_letters_and_digits_only():
    from app.services.registration import new_client_id

    ids = {new_client_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(i.isalnum() and i.isascii() and len(i) == 22 for i in ids)


@pytest.mark.parametrize(
    ("requested", "matches"),
    [
        ("http://127.0.0.1:5555/cb", True),
        ("http://127.0.0.1/cb", True),
        ("http://127.0.0.1:0/cb", False),
        ("http://127.0.0.1:99999/cb", False),
        ("http://127.0.0.1:05555/cb", False),
        ("http://127.0.0.1:5555/cb2", False),
        ("http://127.0.0.1:5555/cb?x=1", False),
        ("http://127.0.0.1:5555/cb#f", False),
        ("http://user@127.0.0.1:5555/cb", False),
        ("https://127.0.0.1:5555/cb", False),
        ("http://127.0.0.2:5555/cb", False),
        ("http://localhost:5555/cb", False),
    ],
)
def test_loopback_redirect_uris_of_native_apps_match_any_port_and_nothing_else(requested, matches):
    native = Client(client_type="public", redirect_uris=["http://127.0.0.1/cb"])
    web = Client(client_type="confidential", redirect_uris=["http://127.0.0.1/cb"])
    assert native.check_redirect_uri(requested) is matches
    assert web.check_redirect_uri(requested) is (requested == "http://127.0.0.1/cb")


def test_a_logo_must_be_one_the_consent_page_can_load():
    """Issue 21, item 3: the consent page's CSP loads images over https only, so a plain-http logo
    (even on a loopback host, which other links may use) is refused at registration."""
    from app.services.registration import registration_problems

    for logo in ("http://127.0.0.1:8080/logo.png", "http://localhost/logo.png", "http://[::1]/l.png"):
        spec = NewClient(name="App", redirect_uris=["https://app.example/cb"], logo_url=logo)
        assert registration_problems(spec, False) == {
            "logo_url": [f"Logo URL {logo!r} must use https: the consent page can load images only over https"]
        }
        spec.homepage_url, spec.logo_url = logo, None  # other links may stay on loopback http
        assert registration_problems(spec, False) == {}
    assert (
        registration_problems(
            NewClient(name="App", redirect_uris=["https://app.example/cb"], logo_url="https://cdn.example/logo.png"),
            False,
        )
        == {}
    )
