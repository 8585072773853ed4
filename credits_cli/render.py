"""The answers for people: aligned tables and cards, wrapped to the terminal's width (`COLUMNS`
when set; 80 columns when the output is not a terminal). `--json` skips this module altogether.

Every value from the catalog goes through `cell`, which removes control characters (so a name
cannot move the cursor or recolour the terminal) and prints nothing as a dash; markup and emoji
codes are off, so a name like `[bold]` or `:fire:` prints as it is."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from credits_cli.terminal import clean

NOTHING = "–"

console = Console(highlight=False, markup=False, emoji=False)


def cell(value: Any) -> Text:
    if value is None or value == "" or value == []:
        return Text(NOTHING, style="dim")
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    return Text(clean(str(value)))


# Columns never broken across lines, so that a value can be copied whole: identifiers and dates.
WHOLE = {"Id", "Profile id", "Track id", "Album id", "UPC", "Released"}
NARROWEST = 10  # the width a wrapping column is left at least, when identifiers stay whole
GAP = 3  # between two columns


def table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[str] = (), empty: str = "Nothing found."
) -> RenderableType:
    """Columns aligned (numbers to the right); names and titles wrap to fit, identifiers and
    numbers stay whole; `empty` when there is no row."""
    cells = [[cell(value) for value in row] for row in rows]
    if not cells:
        return Text(empty, style="dim")
    widths = [max(len(header), *(row[n].cell_len for row in cells)) for n, header in enumerate(headers)]
    whole = [header in WHOLE or header in numeric for header in headers]
    # Whole columns only while the others keep room to wrap in; on a narrower terminal every
    # column folds (rather than the wrapping ones being squeezed out of sight).
    needed = sum(w if keep else min(w, NARROWEST) for w, keep in zip(widths, whole, strict=True)) + GAP * (
        len(headers) - 1
    )
    if needed > console.width:
        whole = [False] * len(headers)
    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold", expand=False)
    for header, width, keep in zip(headers, widths, whole, strict=True):
        grid.add_column(
            header,
            justify="right" if header in numeric else "left",
            no_wrap=keep,
            min_width=width if keep else None,
            overflow="fold",
        )
    for row in cells:
        grid.add_row(*row)
    return grid


def card(title: Any, fields: Sequence[tuple[str, Any]], text: Any = None) -> RenderableType:
    """One record: its title, then `label  value` lines, then free text (a bio) wrapped."""
    lines = Table.grid(padding=(0, 2))
    lines.add_column(style="dim", no_wrap=True)
    lines.add_column(overflow="fold")
    for label, value in fields:
        lines.add_row(label, cell(value))
    parts: list[RenderableType] = [Text(clean(str(title)), style="bold"), lines]
    if text:
        parts += [Text(""), Text(clean(str(text)))]
    return Group(*parts)


def show(*renderables: RenderableType) -> None:
    """Print, without the spaces a table pads its last column with (they would trail every line)."""
    with console.capture() as captured:
        console.print(Group(*renderables))
    sys.stdout.write("\n".join(line.rstrip(" ") for line in captured.get().split("\n")))


def paged(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    page: dict[str, Any],
    every: bool,
    numeric: Sequence[str] = (),
) -> None:
    """A page of a list: its rows, then where the page sits in the list and how to get the rest."""
    count, offset, total = len(page["items"]), page["offset"], page["totalCount"]
    if count == 0:
        show(Text(f"No rows at offset {offset} ({total} in all).", style="dim"))
        return
    end = offset + count
    words = f"Rows {offset + 1}–{end} of {total}."
    if end < total and not every:
        words += f" More: --offset {end}, or --all."
    show(table(headers, rows, numeric), Text(words, style="dim"))


# -- one function per answer ----------------------------------------------------------------------


def roles_text(roles: list[dict[str, Any]]) -> str:
    return ", ".join(r["child"] if r["child"] == r["parent"] else f"{r['child']} ({r['parent']})" for r in roles)


def profile(data: dict[str, Any]) -> None:
    fields = [
        ("id", data["id"]),
        ("city", data.get("city")),
        ("country", data.get("country")),
        ("website", data.get("website")),
        ("facebook", data.get("facebook")),
        ("twitter", data.get("twitter")),
        ("instagram", data.get("instagram")),
        ("spotify", data.get("spotifyId")),
        ("avatar", data.get("avatarUrl")),
    ]
    show(card(data["name"], fields, data.get("bio")))


def profile_credits(page: dict[str, Any], every: bool) -> None:
    rows = [
        (
            row["releaseDate"],
            row["track"]["title"],
            row["album"]["title"],
            roles_text(row["credits"]),
            [a["name"] for a in row["artists"]],
        )
        for row in page["items"]
    ]
    paged(("Released", "Track", "Album", "Roles", "Artists"), rows, page, every)


def charts(rows: list[dict[str, Any]]) -> None:
    def signed(value: Any) -> Any:
        return f"{value:+d}" if isinstance(value, int) else value

    show(
        table(
            ("Chart", "Position", "Change", "Score", "Score change", "Credits", "Share %"),
            [
                (
                    r["chartName"],
                    r["position"],
                    signed(r["positionChange"]),
                    r["score"],
                    signed(r.get("scoreChange")),
                    r["creditsCount"],
                    r["percentage"],
                )
                for r in rows
            ],
            numeric=("Position", "Change", "Score", "Score change", "Credits", "Share %"),
        )
    )


def collaborators(page: dict[str, Any], every: bool) -> None:
    rows = [(r["name"], r["sharedCredits"], r["id"]) for r in page["items"]]
    paged(("Name", "Shared tracks", "Profile id"), rows, page, every, numeric=("Shared tracks",))


def track(data: dict[str, Any]) -> None:
    fields = [
        ("id", data["id"]),
        ("ISRCs", data.get("isrcs")),
        ("Spotify", data.get("spotifyIds")),
        ("label", data.get("label")),
        ("popularity", data.get("popularity")),
        ("preview", data.get("spotifyPreviewUrl")),
    ]
    show(card(data["title"], fields))


def track_albums(page: dict[str, Any], every: bool) -> None:
    rows = [(r["releaseDate"], r["title"], r["popularity"], r["id"]) for r in page["items"]]
    paged(("Released", "Album", "Popularity", "Album id"), rows, page, every, numeric=("Popularity",))


def album(data: dict[str, Any]) -> None:
    fields = [
        ("id", data["id"]),
        ("UPC", data.get("upc")),
        ("label", data.get("label")),
        ("released", data.get("releaseDate")),
        ("popularity", data.get("popularity")),
        ("Spotify", data.get("spotifyId")),
        ("art", data.get("albumArt")),
    ]
    show(card(data["title"], fields))


def album_credits(page: dict[str, Any], every: bool) -> None:
    rows = [(r["track"]["title"], r["profile"]["name"], roles_text(r["credits"])) for r in page["items"]]
    paged(("Track", "Credited", "Roles"), rows, page, every)


def search(data: dict[str, Any], types: Sequence[str]) -> None:
    """The buckets asked for (all three by default), each with its total and its first rows."""
    sections: list[RenderableType] = []
    Row = Callable[[dict[str, Any]], Sequence[Any]]
    buckets: dict[str, tuple[str, dict[str, Any], tuple[str, ...], Row]] = {
        "profile": (
            "Profiles",
            data["profiles"],
            ("Name", "Credits", "Collaborators", "Common roles", "Profile id"),
            lambda r: (r["name"], r["creditCount"], r["collaboratorsCount"], r["commonCredits"], r["id"]),
        ),
        "track": (
            "Tracks",
            data["tracks"],
            ("Title", "Popularity", "Released", "Track id"),
            lambda r: (r["title"], r["popularity"], (r.get("releaseDate") or "")[:10], r["id"]),
        ),
        "album": (
            "Albums",
            data["albums"],
            ("Title", "Popularity", "Released", "UPC", "Album id"),
            lambda r: (r["title"], r["popularity"], r["releaseDate"], r.get("upc"), r["id"]),
        ),
    }
    for kind in types:
        title, bucket, headers, row = buckets[kind]
        shown = len(bucket["items"])
        heading = f"{title}: {bucket['total']} found" + (f", first {shown}" if shown < bucket["total"] else "")
        sections.append(Text(heading, style="bold"))
        if shown:
            sections.append(
                table(headers, [row(r) for r in bucket["items"]], numeric=("Credits", "Collaborators", "Popularity"))
            )
        sections.append(Text(""))
    show(*sections[:-1])


def autocomplete(data: dict[str, Any]) -> None:
    show(
        table(("Kind", "Name", "Id"), [(r["entityType"], r["name"], r["id"]) for r in data["items"]], empty="No match.")
    )


def roles(page: dict[str, Any]) -> None:
    show(table(("Family", "Role"), [(r["parent"], r["child"]) for r in page["items"]]))
    show(Text(f"{page['totalCount']} roles.", style="dim"))


def profiles_found(data: dict[str, Any]) -> None:
    rows = [(r["name"], r["id"], len(r["trackIds"])) for r in data["items"]]
    show(table(("Name", "Profile id", "Tracks"), rows, numeric=("Tracks",), empty="No profile found."))
