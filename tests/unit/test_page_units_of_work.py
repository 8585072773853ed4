"""The member-facing pages keep one rule (issue 20): the services below them only flush, and each
route commits its unit of work itself.

Read from the source, not run: a service module that starts committing (or declares a route), or
a views helper that commits on a route's behalf, fails here before any behaviour changes. Every
module of app/services is a service; in the member-facing packages of app/web a views module is
named `views.py` or `*_views.py`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES_PACKAGE = "app/services"
PAGES = ("app/web/account", "app/web/auth", "app/web/consent")
ROUTE_DECORATORS = {"route", "get", "post", "put", "patch", "delete"}


def modules(*packages: str) -> list[Path]:
    return sorted(path for package in packages for path in (ROOT / package).glob("*.py"))


def is_views(path: Path) -> bool:
    return path.stem == "views" or path.stem.endswith("_views")


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def calls_to(node: ast.AST, method: str) -> list[int]:
    """Line numbers of every `<something>.method(...)` call under `node`."""
    return [
        call.lineno
        for call in ast.walk(node)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == method
    ]


def is_route(function: ast.FunctionDef) -> bool:
    """Decorated `@bp.route(...)`, `@bp.get(...)`, `@bp.post(...)` and the like."""
    return any(
        isinstance(decorator, ast.Call)
        and isinstance(decorator.func, ast.Attribute)
        and decorator.func.attr in ROUTE_DECORATORS
        for decorator in function.decorator_list
    )


def functions(module: ast.Module) -> list[ast.FunctionDef]:
    return [node for node in ast.walk(module) if isinstance(node, ast.FunctionDef)]


SERVICES = modules(SERVICES_PACKAGE)
VIEWS = [path for path in modules(*PAGES) if is_views(path)]


def test_the_packages_have_both_kinds():
    names = {path.relative_to(ROOT).as_posix() for path in SERVICES}
    assert {"app/services/second_factor.py", "app/services/passkeys.py", "app/services/consent.py"} <= names
    assert {"app/web/account/two_step_views.py", "app/web/auth/two_step_login_views.py", "app/web/auth/views.py"} <= {
        path.relative_to(ROOT).as_posix() for path in VIEWS
    }


@pytest.mark.parametrize("path", SERVICES, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_services_never_commit_nor_roll_back(path):
    """The view that called the service owns the unit of work: it commits once (or, when the
    request fails, the uncommitted session is rolled back at teardown)."""
    module = tree(path)
    assert calls_to(module, "commit") == [], f"{path.name} commits: only the views do"
    assert calls_to(module, "rollback") == [], f"{path.name} rolls back: only the views do"


@pytest.mark.parametrize("path", SERVICES, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_services_declare_no_routes(path):
    routes = [function.name for function in functions(tree(path)) if is_route(function)]
    assert routes == [], f"{path.name} declares routes {routes}: they belong in a views module"


@pytest.mark.parametrize("path", VIEWS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_in_views_only_the_routes_commit(path):
    """A helper that commits would end a route's unit of work behind its back (and a route
    calling two such helpers would commit twice)."""
    helpers = [
        function.name for function in functions(tree(path)) if not is_route(function) and calls_to(function, "commit")
    ]
    assert helpers == [], f"{path.name}: {helpers} commit, but are not routes"
