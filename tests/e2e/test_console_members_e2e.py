"""In a real browser, an administrator's members pages: the list links each member to their page
(verified email, two-step methods, last sign-in, sessions, connected apps, API keys, latest events),
suspending asks for a reason on a confirmation page (kept in the audit), and the admin's own row
offers no Suspend. Screenshots under artifacts/e2e/."""

from __future__ import annotations

from tests.factories import PASSWORD, make_member
from tests.key_support import make_key


def sign_in(page, live_server, email: str, next_path: str) -> None:
    page.goto(live_server(f"/login?next={next_path}"))
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**{next_path}")


def test_member_page_and_suspension_with_a_reason(live_server, chromium, page, shots):
    from playwright.sync_api import expect

    admin = make_member(role="admin", email="root@example.test", name="Root Admin")
    member = make_member(role="developer", email="dana@example.test", name="Dana Writer")
    make_key(owner=member, name="Dana's server")
    # Dana signs in once, in her own browser: a session and a sign-in event to see.
    dana = chromium.new_context()
    try:
        sign_in(dana.new_page(), live_server, member.email, "/account")
    finally:
        dana.close()

    sign_in(page, live_server, admin.email, "/console/users")
    own_row = page.locator("tr", has_text=admin.email)
    expect(own_row.get_by_role("link", name="Suspend…", exact=False)).to_have_count(0)
    expect(own_row).to_contain_text("your account")
    shots.take("members")
    page.get_by_role("link", name=member.email, exact=True).click()
    expect(page.get_by_role("heading", name="Dana Writer")).to_be_visible()
    facts = page.locator("dl.member-facts")
    expect(facts).to_contain_text("verified")
    expect(facts).to_contain_text("off (password only)")
    expect(page.locator("table.sessions")).to_contain_text("Chrome")
    expect(page.locator("ul.member-keys")).to_contain_text("Dana's server")
    expect(page.locator("table.audit")).to_contain_text("Signed in")
    shots.take("member-page")

    page.get_by_role("link", name="Suspend…").click()
    expect(page.get_by_role("heading", name=f"Suspend {member.email}?")).to_be_visible()
    page.get_by_role("button", name=f"Suspend {member.email}").click()
    expect(page.locator(".field.has-error")).to_contain_text("Say why the member is suspended")
    shots.take("suspend-needs-a-reason")
    page.get_by_label("Reason (kept in the audit log)").fill("Chargeback fraud, ticket 118")
    with page.expect_navigation():
        page.get_by_role("button", name=f"Suspend {member.email}").click()
    expect(page.locator(".flash").first).to_contain_text("is suspended: 1 sessions ended")
    expect(page.get_by_role("heading", name="Dana Writer")).to_contain_text("suspended")
    expect(page.locator("table.audit tr", has_text="Member suspended")).to_contain_text("Chargeback fraud, ticket 118")
    expect(page.locator("ul.member-keys")).to_contain_text("paused")
    shots.take("member-suspended")

    page.get_by_role("button", name="Lift suspension").click()
    expect(page.locator(".flash").first).to_contain_text("may sign in again")

    page.goto(live_server(f"/console/users/{admin.id}"))
    expect(page.get_by_role("link", name="Suspend…")).to_have_count(0)
    expect(page.locator("main")).to_contain_text("another administrator can suspend it, you cannot")
    assert page.problems.messages == [], page.problems.messages
