"""Issue 20, items 1 and 3, for the protocol: the store never ends a transaction (every statement
joins the caller's), and the protocol commits only where one of its endpoints finishes a unit of
work - each place named here with the reason, so a new commit elsewhere fails this test."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# (module, function) -> why the unit of work ends there
PROTOCOL_COMMITS = {
    ("app/protocol/authorize.py", "_issue_code"): "the answer: request consumed, consent, audit, code",
    ("app/protocol/authorize.py", "complete_consent"): "a refused answer still consumes the request",
    ("app/protocol/authorize.py", "_hand_off"): "the parked request, before the browser goes to read it",
    ("app/protocol/authorize.py", "_agent"): "an agent's document just read is kept, whatever the request's outcome",
    ("app/protocol/registration.py", "register"): "a dynamically registered agent, before its id is handed out",
    ("app/protocol/grants.py", "create_token_response"): "the token response: code or refresh spent, pair stored",
    ("app/protocol/grants.py", "query_authorization_code"): "a reused code's family revoked, though refused",
    ("app/protocol/grants.py", "validate_token_request"): "a code that failed a check stays spent, though refused",
    ("app/protocol/grants.py", "authenticate_refresh_token"): "a reused refresh token's family revoked, though refused",
    ("app/protocol/endpoints.py", "revoke_token"): "the revocation endpoint's change",
    ("app/protocol/endpoints.py", "end_session"): "the session ended before the redirect",
}


def commits_by_function(path: Path) -> dict[str, int]:
    """How many `.commit()` / `.rollback()` calls each function of a module holds, and calls of
    app.store.unit_of_work's `commit` imported by name."""
    found: dict[str, int] = {}
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            calls = [
                n
                for n in ast.walk(fn)
                if isinstance(n, ast.Call)
                and (
                    (isinstance(n.func, ast.Attribute) and n.func.attr in ("commit", "rollback"))
                    or (isinstance(n.func, ast.Name) and n.func.id in ("commit", "rollback"))
                )
            ]
            if calls:
                found[fn.name] = len(calls)
    return found


def test_the_protocol_store_never_ends_a_transaction():
    """Only the unit of work itself (app/store/unit_of_work.py) commits: what owns the request calls it."""
    for path in sorted((ROOT / "app/store").glob("*.py")):
        if path.name != "unit_of_work.py":
            assert commits_by_function(path) == {}, path


def test_the_protocol_commits_only_where_an_endpoint_finishes_its_work():
    seen = {
        (str(path.relative_to(ROOT)), name)
        for path in sorted((ROOT / "app/protocol").glob("*.py"))
        for name in commits_by_function(path)
    }
    assert seen == set(PROTOCOL_COMMITS)


def test_each_of_those_places_commits_once():
    for (module, name), why in PROTOCOL_COMMITS.items():
        assert commits_by_function(ROOT / module)[name] == 1, (module, name, why)
