"""The page a member lands on after signing in directly: where to go next."""

from tests.factories import make_member
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
