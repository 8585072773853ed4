"""Every amount on the console carries its currency (issue 50, item 16), in a real browser: the
API keys list and a key's page (usage amounts, plan fees, the price bands, the plan choices), the
apps list and an app's page, and the fee ledger - a number that is money is always "... USD"."""

from __future__ import annotations

import re

from tests.e2e.test_console_pages_e2e import open_console
from tests.factories import make_client, make_member
from tests.key_support import make_key

# Money as the pages write it: 0.025, 12.50, 99, 3,000 - next to a word that says it is money.
MONEY_WORDS = re.compile(r"(fee|amount|price|per call|per month|a month|total|charged|costs)", re.I)
NUMBER = re.compile(r"(?<![\w.,:/-])\d+(?:,\d{3})*(?:\.\d+)?(?![\w.,:/%-])")


def amounts_without_currency(text: str) -> list[str]:
    """Numbers in a money sentence that are not followed by a currency code."""
    missing = []
    for line in text.splitlines():
        if not MONEY_WORDS.search(line):
            continue
        for match in NUMBER.finditer(line):
            after = line[match.end() : match.end() + 4]
            before = line[max(0, match.start() - 12) : match.start()]
            countish = re.match(
                r"\s*(calls|requests|apps|members|profiles|live|a (second|minute|day)|per (second|minute))",
                line[match.end() :],
            )
            if after.strip().startswith("USD") or countish or re.search(r"(\d{4}-|Page |up to |with )$", before):
                continue
            missing.append(f"{match.group()} in: {line.strip()[:120]}")
    return missing


def test_amounts_always_carry_their_currency(live_server, page, shots):
    # The check itself catches what the pages used to say.
    assert len(amounts_without_currency("Scale: 3000 per month with 150,000 calls included; 0.020 per call")) == 2
    assert amounts_without_currency("Scale: 3,000 USD per month with 150,000 calls included") == []
    admin = make_member(role="admin")
    client, _ = make_client(name="Liner Notes", owner_id=admin.id)
    key, _ = make_key(owner=admin, name="Build server", plan="build")
    open_console(page, live_server, admin.email, "/console/api-keys")
    found = {}
    for path in (
        "/console/api-keys",
        f"/console/api-keys/{key.id}",
        "/console",
        f"/console/apps/{client.client_id}",
        "/console/fees",
    ):
        page.goto(live_server(path))
        text = page.locator("main").inner_text()
        options = " ".join(page.locator("main select option").all_inner_texts())
        if missing := amounts_without_currency(text + "\n" + options):
            found[path] = missing
        shots.take(path.strip("/").replace("/", "-")[:40])
    assert found == {}, found
    page.goto(live_server("/console/api-keys"))
    assert "0.025 USD per call" in page.locator("main").inner_text()
    assert "3,000 USD a month" in " ".join(page.get_by_label("Plan").locator("option").all_inner_texts())
