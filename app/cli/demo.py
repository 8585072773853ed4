"""`flask demo seed`: the demo catalog, members, apps and a developer's API key for a local run
(`make run`), built in one transaction and printed with their fresh credentials after it commits."""

from __future__ import annotations

from typing import Any

import click

from app.cli.output import CommandGroup, emit, fail, json_option
from app.core.extensions import db
from app.services.catalog_seed import CatalogExists
from app.services.demo import DEMO_PORT, seed_accounts

demo = CommandGroup("demo", help="Demo data for a local run.")


@demo.command("seed")
@click.option("--seed", "catalog_seed", type=int, default=None, help="Seed of the demo catalog (same seed, same data).")
@click.option(
    "--credits",
    "credit_count",
    type=click.IntRange(min=100),
    default=None,
    help="Credit rows in the demo catalog (e.g. 100000 for benchmarks).",
)
@click.option("--rebuild", is_flag=True, help="Replace an existing catalog (members keep their accounts).")
@click.option(
    "--demo-port",
    type=click.IntRange(1, 65535),
    default=DEMO_PORT,
    show_default=True,
    envvar="DEMO_PORT",
    help="The demo app's port: its redirect and logout URIs are registered for it (env DEMO_PORT).",
)
@json_option
def demo_seed(catalog_seed: int | None, credit_count: int | None, rebuild: bool, demo_port: int, as_json: bool) -> None:
    """Create (or refresh) the demo catalog, members, admin and apps and print their credentials."""
    try:
        data = seed_accounts(catalog_seed=catalog_seed, credits=credit_count, rebuild=rebuild, demo_port=demo_port)
    except CatalogExists as exc:
        fail(str(exc))
    db.session.commit()
    emit(data, as_json, _human)


def _human(d: dict[str, Any]) -> str:
    c = d["catalog"]
    origin = f"seed {c['seed']}" if c["built"] else "kept"
    lines = [
        f"Demo catalog ({origin}): {c['profiles']} profiles, "
        f"{c['albums']} albums, {c['tracks']} tracks, {c['credits']} credits, {c['chart_rows']} chart rows"
    ]
    lines.append("Demo members (passwords shown once):")
    lines += [
        f"  {m['tier']:<5} {m['email']}  password: {m['password']}  profile: {m['profile_id']}" for m in d["members"]
    ]
    lines.append("Demo apps:")
    for a in d["apps"]:
        secret = f"  secret: {a['client_secret']}" if a["client_secret"] else "  (public: no secret)"
        lines.append(f"  {a['name']}: client_id {a['client_id']}{secret}")
        lines.append(f"      redirect URIs: {' '.join(a['redirect_uris'])}")
    admin = d["admin"]
    lines.append(
        f"Demo admin (console: members, signing keys, every app): {admin['email']}  password: {admin['password']}"
    )
    dev = d["developer"]
    lines.append(f"Demo developer: {dev['email']}  password: {dev['password']}")
    lines.append(f"  secret API key ({dev['api_key_plan']}): {dev['api_key']}  (send it as x-api-key to /v1)")
    return "\n".join(lines)
