"""One command per catalog operation (docs/catalog-api.md), each one request - or, with `--all`,
one request per page:

  credits profile get|credits|charts|collaborators ID     getProfile, getProfileCredits, ...
  credits track get|albums --isrc|--spotify|--id VALUE    getTrack, getTrackAlbums
  credits album get|credits --upc|--spotify|--id VALUE    getAlbum, getAlbumCredits
  credits search KEYWORD [--type track,profile,album]     search
  credits autocomplete Q                                  autocomplete
  credits roles                                           listRoles
  credits profiles search --names ... --track-ids ...     searchProfiles

`--json` prints the API's `data` exactly; without it, `render` words it for people."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from credits_cli.api import segment
from credits_cli.terminal import progress

if TYPE_CHECKING:
    from credits_cli.cli import Settings

SEARCH_TYPES = ("track", "profile", "album")
TRACK_KEYS = {"isrc": "ISRC", "spotify": "Spotify track id", "id": "track id (UUID)"}
ALBUM_KEYS = {"upc": "UPC", "spotify": "Spotify album id", "id": "album id (UUID)"}

pass_settings = click.pass_obj
json_option = click.option("--json", "as_json", is_flag=True, help="Print the API's data as JSON, for scripts.")


def paging_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--limit", type=int, help="Rows per page, 1 to 50 (the API's default: 20; with --all: 50)."),
        click.option("--offset", type=int, help="Rows to skip (default 0)."),
        click.option(
            "--all", "every", is_flag=True, help="Every row from --offset on: one request per page until the end."
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def emit(data: Any, as_json: bool, human: Callable[[], None]) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        human()


def listing(
    settings: Settings, path: str, label: str, limit: int | None, offset: int | None, every: bool
) -> dict[str, Any]:
    """One page of a list (only the paging values given are sent), or with `every` all of them."""
    client = settings.client()
    if not every:
        given = {name: value for name, value in (("limit", limit), ("offset", offset)) if value is not None}
        page: dict[str, Any] = client.get(path, given)
        return page
    with progress(label) as update:
        return client.every_page(path, limit, offset, update)


def identifier_options(kind: str, keys: dict[str, str]) -> Callable[..., Any]:
    """`--isrc X | --spotify X | --id X`: how the command names its track or album."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for key, words in reversed(keys.items()):
            command = click.option(f"--{key}", f"by_{key}", metavar="VALUE", help=f"The {kind}'s {words}.")(command)
        return command

    return decorate


def identifier(keys: dict[str, str], given: dict[str, str | None]) -> str:
    """The path `{idKey}/{idValue}` of the one identifier given."""
    chosen = [(key, given[f"by_{key}"]) for key in keys if given.get(f"by_{key}") is not None]
    if len(chosen) != 1:
        names = [f"--{key}" for key in keys]
        raise click.UsageError(f"give exactly one of {', '.join(names[:-1])} or {names[-1]}")
    key, value = chosen[0]
    return f"{key}/{segment(value or '')}"


def words(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> str:
    """Free text given as one or several arguments (`credits search love song`)."""
    return " ".join(values)


def comma_list(values: tuple[str, ...]) -> str:
    """Repeated or comma-separated option values, as one comma-separated value."""
    return ",".join(v.strip() for value in values for v in value.split(",") if v.strip())


# -- profile ----------------------------------------------------------------------------------------


@click.group()
def profile() -> None:
    """A profile by id: the profile, its credits, chart rows and collaborators."""


@profile.command("get")
@click.argument("profile_id", metavar="ID")
@json_option
@pass_settings
def profile_get(settings: Settings, profile_id: str, as_json: bool) -> None:
    """The profile (getProfile)."""
    data = settings.client().get(f"/profile/{segment(profile_id)}")
    emit(data, as_json, lambda: render().profile(data))


@profile.command("credits")
@click.argument("profile_id", metavar="ID")
@paging_options
@json_option
@pass_settings
def profile_credits(
    settings: Settings, profile_id: str, limit: int | None, offset: int | None, every: bool, as_json: bool
) -> None:
    """The profile's credits, newest release first (getProfileCredits)."""
    page = listing(settings, f"/profile/{segment(profile_id)}/credits", "Credits", limit, offset, every)
    emit(page, as_json, lambda: render().profile_credits(page, every))


@profile.command("charts")
@click.argument("profile_id", metavar="ID")
@json_option
@pass_settings
def profile_charts(settings: Settings, profile_id: str, as_json: bool) -> None:
    """The profile's chart rows (getProfileCharts)."""
    rows = settings.client().get(f"/profile/{segment(profile_id)}/charts")
    emit(rows, as_json, lambda: render().charts(rows))


@profile.command("collaborators")
@click.argument("profile_id", metavar="ID")
@paging_options
@json_option
@pass_settings
def profile_collaborators(
    settings: Settings, profile_id: str, limit: int | None, offset: int | None, every: bool, as_json: bool
) -> None:
    """The profiles sharing the most tracks with it (getProfileCollaborators)."""
    page = listing(settings, f"/profile/{segment(profile_id)}/collaborators", "Collaborators", limit, offset, every)
    emit(page, as_json, lambda: render().collaborators(page, every))


# -- track and album --------------------------------------------------------------------------------


@click.group()
def track() -> None:
    """A track by ISRC, Spotify id or id: the track and the albums it is on."""


@track.command("get")
@identifier_options("track", TRACK_KEYS)
@json_option
@pass_settings
def track_get(settings: Settings, /, as_json: bool, **given: str | None) -> None:
    """The track (getTrack)."""
    path = f"/track/{identifier(TRACK_KEYS, given)}"
    data = settings.client().get(path)
    emit(data, as_json, lambda: render().track(data))


@track.command("albums")
@identifier_options("track", TRACK_KEYS)
@paging_options
@json_option
@pass_settings
def track_albums(
    settings: Settings, /, limit: int | None, offset: int | None, every: bool, as_json: bool, **given: str | None
) -> None:
    """The albums the track is on, newest release first (getTrackAlbums)."""
    path = f"/track/{identifier(TRACK_KEYS, given)}/albums"
    page = listing(settings, path, "Albums", limit, offset, every)
    emit(page, as_json, lambda: render().track_albums(page, every))


@click.group()
def album() -> None:
    """An album by UPC, Spotify id or id: the album and who is credited on it."""


@album.command("get")
@identifier_options("album", ALBUM_KEYS)
@json_option
@pass_settings
def album_get(settings: Settings, /, as_json: bool, **given: str | None) -> None:
    """The album (getAlbum)."""
    path = f"/album/{identifier(ALBUM_KEYS, given)}"
    data = settings.client().get(path)
    emit(data, as_json, lambda: render().album(data))


@album.command("credits")
@identifier_options("album", ALBUM_KEYS)
@paging_options
@json_option
@pass_settings
def album_credits(
    settings: Settings, /, limit: int | None, offset: int | None, every: bool, as_json: bool, **given: str | None
) -> None:
    """Who is credited on the album's tracks, with their roles (getAlbumCredits)."""
    path = f"/album/{identifier(ALBUM_KEYS, given)}/credits"
    page = listing(settings, path, "Album credits", limit, offset, every)
    emit(page, as_json, lambda: render().album_credits(page, every))


# -- search, autocomplete, roles, profile search -----------------------------------------------------


def search_types(_ctx: click.Context, _param: click.Parameter, value: str | None) -> list[str] | None:
    if value is None:
        return None
    types = [t.strip() for t in value.split(",") if t.strip()]
    unknown = [t for t in types if t not in SEARCH_TYPES]
    if unknown or not types:
        raise click.BadParameter(f"a comma-separated list of {', '.join(SEARCH_TYPES)}")
    return list(dict.fromkeys(types))


@click.command()
@click.argument("keyword", nargs=-1, required=True, callback=words)
@click.option(
    "--type",
    "types",
    callback=search_types,
    metavar="TYPES",
    help="Buckets to fill: track,profile,album (default: all).",
)
@json_option
@pass_settings
def search(settings: Settings, keyword: str, types: list[str] | None, as_json: bool) -> None:
    """Profiles, tracks and albums whose name or title contains KEYWORD, at most 10 of each (search)."""
    body: dict[str, Any] = {"keyword": keyword} if types is None else {"keyword": keyword, "type": types}
    data = settings.client().post("/search", body)
    emit(data, as_json, lambda: render().search(data, types or ["profile", "track", "album"]))


@click.command()
@click.argument("q", nargs=-1, required=True, callback=words)
@json_option
@pass_settings
def autocomplete(settings: Settings, q: str, as_json: bool) -> None:
    """Names and titles starting with Q, profiles first, at most 10 (autocomplete)."""
    data = settings.client().get("/search/autocomplete", {"q": q})
    emit(data, as_json, lambda: render().autocomplete(data))


@click.command()
@json_option
@pass_settings
def roles(settings: Settings, as_json: bool) -> None:
    """The whole credit-role taxonomy: each role with its family (listRoles)."""
    page = settings.client().get("/roles")
    emit(page, as_json, lambda: render().roles(page))


@click.group()
def profiles() -> None:
    """Profiles credited on tracks you know."""


@profiles.command("search")
@click.option("--names", multiple=True, required=True, help="Names to look for (comma-separated or repeated).")
@click.option("--track-ids", multiple=True, help="Track ids (UUIDs; comma-separated or repeated).")
@click.option("--spotify-track-ids", multiple=True, help="Spotify track ids (comma-separated or repeated).")
@json_option
@pass_settings
def profiles_search(
    settings: Settings,
    names: tuple[str, ...],
    track_ids: tuple[str, ...],
    spotify_track_ids: tuple[str, ...],
    as_json: bool,
) -> None:
    """Who on these tracks has one of these names (searchProfiles)."""
    if not comma_list(track_ids) and not comma_list(spotify_track_ids):
        raise click.UsageError("give --track-ids or --spotify-track-ids")
    params = {
        "names": comma_list(names),
        "track_ids": comma_list(track_ids) or None,
        "spotify_track_ids": comma_list(spotify_track_ids) or None,
    }
    data = settings.client().get("/profiles/search", params)
    emit(data, as_json, lambda: render().profiles_found(data))


def render() -> Any:
    """The human renderers, imported only when they are used (`--json` never loads rich)."""
    from credits_cli import render as module

    return module


COMMANDS = [profile, track, album, search, autocomplete, roles, profiles]
