"""The page a member lands on after signing in directly: where to go next."""

import requests

from tests.factories import PASSWORD, make_member
from tests.flows import csrf_token, hidden
from tests.integration.console_support import signed_in


def test_members_are_pointed_to_their_account_only(live_server):
    member = make_member()
    page = signed_in(live_server.url, member.email, "/signed-in").get("/signed-in")
    assert page.status_code == 200
    assert 'href="/account"' in page.text
    assert 'href="/console"' not in page.text


def test_developers_also_get_the_console(live_server):
    developer = make_member(role="developer")
    page = signed_in(live_server.url, developer.email, "/signed-in").get("/signed-in")
    assert 'href="/account"' in page.text and 'href="/console"' in page.text


def test_a_next_path_that_hides_another_site_is_not_followed(live_server):
    """`/\\t/evil.example` looks like a path, but a Location drops the tab: `//evil.example`."""
    member = make_member()
    browser = requests.Session()
    page = browser.get(live_server("/login"), params={"next": "/\t/evil.example"})
    assert hidden(page.text, "next") in ("", None)
    response = browser.post(
        live_server("/login"),
        allow_redirects=False,
        data={
            "csrf_token": csrf_token(page.text),
            "email": member.email,
            "password": PASSWORD,
            "next": "/\t/evil.example",
        },
    )  # a forged form field is checked again
    assert response.status_code == 302
    assert response.headers["Location"] == "/signed-in"


def test_signing_out_from_the_signed_in_page_says_so_and_ends_the_session(live_server):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/signed-in")
    page = browser.get("/signed-in")
    response = browser.post("/logout", data={"csrf_token": csrf_token(page.text)})
    assert response.status_code == 303 and response.headers["Location"] == "/login"
    assert "You are signed out." in browser.get("/login").text
    assert browser.get("/signed-in").status_code == 302
