"""What every command shares: its group (which refuses arguments that are not text), `--json`,
`--grace`, printing a result and refusing with a message.

The one module the command modules import from each other, so each answers the same way."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any, NoReturn

import click
from click.decorators import FC
from flask.cli import AppGroup

from app.core.input_rules import storable_text
from app.core.scopes import SCOPES, scope_list


class CommandGroup(AppGroup):
    """A group of `flask` commands whose arguments must be text the stores hold: Python hands a
    byte that the terminal's encoding cannot decode over as a lone surrogate (surrogateescape),
    which no database takes, and a NUL neither. Refused before any command runs, with a usage
    error (exit code 2), never a traceback."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        for arg in args:
            if not storable_text(arg):
                raise click.UsageError(f"not valid text: {arg!r} (is the terminal's encoding UTF-8?)", ctx)
        return super().parse_args(ctx, args)


json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def grace_option(maximum: timedelta, what: str) -> Callable[[FC], FC]:
    """`--grace SECONDS` of a rotation: how long the old `what` keeps working, handed to the command
    as a timedelta (None: it stops at once)."""
    return click.option(
        "--grace",
        type=click.IntRange(0, int(maximum.total_seconds())),
        default=0,
        show_default=True,
        callback=lambda ctx, param, seconds: timedelta(seconds=seconds) if seconds else None,
        help=f"Seconds the old {what} keeps working (0: it stops at once; at most {maximum.days} days).",
    )


def emit(data: Any, as_json: bool, human: Callable[[Any], str]) -> None:
    """Print `data` as indented JSON with `--json`, else as `human` words it."""
    click.echo(json.dumps(data, indent=2, default=str) if as_json else human(data))


def fail(message: str) -> NoReturn:
    """Refuse with `message` (exit code 1, nothing committed)."""
    raise click.ClickException(message)


def fields(d: dict[str, Any]) -> str:
    """A result as `key: value` lines, leaving out what is None."""
    return "\n".join(f"{k}: {v}" for k, v in d.items() if v is not None)


def _known_scopes(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--scope` refuses a scope it does not know, by name (registration would silently drop it)."""
    if value is None:
        return None
    unknown = [s for s in scope_list(value) if s not in SCOPES]
    if unknown:
        raise click.BadParameter(
            f"unknown scope{'s' if len(unknown) > 1 else ''} {', '.join(repr(s) for s in unknown)}; "
            f"the scopes are: {' '.join(SCOPES)}",
            ctx,
            param,
        )
    if not scope_list(value):
        raise click.BadParameter(f"give at least one scope of: {' '.join(SCOPES)}", ctx, param)
    return value


scope_option = click.option(
    "--scope",
    default=None,
    callback=_known_scopes,
    help="Allowed scopes, space-separated (openid is always added); default: all. An unknown name is refused.",
)
