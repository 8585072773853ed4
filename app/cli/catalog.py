"""`flask catalog generate`: a catalog at a real platform's size for benchmarks and load tests
(app/services/catalog_generate.py), and `flask catalog refresh` after rows were changed by hand."""

from __future__ import annotations

import time
from typing import Any

import click

from app.cli.output import CommandGroup, emit, fail, json_option
from app.core.extensions import db
from app.services.catalog_generate import DEFAULT_SEED, CatalogNotEmpty, generate, sizes
from app.store import store

catalog = CommandGroup("catalog", help="The music catalog at scale.")


@catalog.command("generate")
@click.option("--tracks", type=click.IntRange(min=1), default=None, help="Tracks (default 1,000,000).")
@click.option("--profiles", type=click.IntRange(min=2), default=None, help="Profiles (default 250,000).")
@click.option("--albums", type=click.IntRange(min=1), default=None, help="Albums (default 150,000).")
@click.option("--credits", type=click.IntRange(min=1), default=None, help="Credit rows (default 5,000,000).")
@click.option("--tenth", is_flag=True, help="Default sizes a tenth of the above (the SQLite scale).")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True, help="Same seed and sizes, same rows.")
@click.option("--replace", is_flag=True, help="Replace the catalog there (members keep their accounts).")
@json_option
def catalog_generate(
    tracks: int | None,
    profiles: int | None,
    albums: int | None,
    credits: int | None,
    tenth: bool,
    seed: int,
    replace: bool,
    as_json: bool,
) -> None:
    """Generate a large, realistic catalog (deterministic by seed), in one transaction."""
    wanted = sizes(tracks, profiles, albums, credits, tenth)
    started = time.monotonic()
    try:
        made = generate(seed=seed, replace=replace, **wanted)
    except CatalogNotEmpty as exc:
        fail(str(exc))
    db.session.commit()
    store().catalog.after_load()
    emit({**made.as_dict(), "seconds": round(time.monotonic() - started, 1)}, as_json, _human)


@catalog.command("refresh")
def catalog_refresh() -> None:
    """Recompute the profile figures search shows (popularity, credits, collaborators, roles)."""
    store().catalog.refresh_profile_stats()
    db.session.commit()
    store().catalog.after_load()
    click.echo("profile figures recomputed")


def _human(d: dict[str, Any]) -> str:
    return (
        f"Catalog (seed {d['seed']}): {d['profiles']} profiles, {d['albums']} albums, {d['tracks']} tracks, "
        f"{d['credits']} credits, {d['chart_rows']} chart rows, {d['roles']} roles in {d['seconds']} s"
    )
