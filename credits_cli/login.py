"""`credits login` and `credits logout`: keep a key in the user's config directory, so that it
is neither typed on every command (shell history) nor left in the environment.

login reads the key without echo from the terminal, or from standard input when piped
(`credits login < key.txt`), checks it once against the API (one metered request, `GET /roles`)
and stores it only if the API accepts it."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from credits_cli import credentials
from credits_cli.errors import BadUsage

if TYPE_CHECKING:
    from credits_cli.cli import Settings


def _read_key() -> str:
    if sys.stdin.isatty():
        value: str = click.prompt("Secret API key (msk_…)", hide_input=True, err=True)
        return value
    line = sys.stdin.readline()
    if not line.strip():
        raise BadUsage("no key on standard input", "Pipe the key in, or run `credits login` in a terminal.")
    return line


@click.command()
@click.pass_obj
def login(settings: Settings) -> None:
    """Store a secret API key for the commands that follow.

    Prompts for it without echo (or reads one line from standard input when piped), checks it once
    against the API - one request on the key's meter - and saves it, readable by you alone, in
    $XDG_CONFIG_HOME/credits/api-key (else ~/.config/credits/api-key). CREDITS_API_KEY, when set,
    takes precedence over the stored key."""
    settings.root()  # a bad address is refused before the key is asked for
    key = credentials.checked(_read_key(), "the key given")
    client = settings.client(key)
    client.get("/roles")  # the cheapest operation: answers only if the API accepts the key
    path = credentials.store(key)
    click.echo(f"Key {credentials.visible(key)} accepted by {client.root}; saved in {path}.")
    if os.environ.get(credentials.KEY_ENV, "").strip():
        click.echo(f"Note: {credentials.KEY_ENV} is set in this shell, and takes precedence over the saved key.")


@click.command()
def logout() -> None:
    """Remove the stored API key."""
    path = credentials.remove()
    click.echo(f"Removed the key saved in {path}." if path else "No key was saved.")
    if os.environ.get(credentials.KEY_ENV, "").strip():
        click.echo(f"Note: {credentials.KEY_ENV} is still set in this shell.")
