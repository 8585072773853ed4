"""The `credits` command: options every command shares, and the command groups.

Nothing here reads the key or opens a connection: each command asks for its client when it runs,
so `--help` works everywhere with no key and no network."""

from __future__ import annotations

from dataclasses import dataclass

import click

from credits_cli import login, operations
from credits_cli.api import DEFAULT_ROOT, URL_ENV, Client, api_root
from credits_cli.credentials import current_key


@dataclass(frozen=True)
class Settings:
    base_url: str
    timeout: float
    retries: int

    def root(self) -> str:
        """The API root, checked when a command first needs it (so --help never fails on it)."""
        return api_root(self.base_url)

    def client(self, key: str | None = None) -> Client:
        """A client for the API root with `key`, or with the key of the environment or `credits login`."""
        root = self.root()
        return Client(root, key if key is not None else current_key(), self.timeout, self.retries)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="credits-id", prog_name="credits")
@click.option(
    "--base-url",
    envvar=URL_ENV,
    default=DEFAULT_ROOT,
    show_default=True,
    metavar="URL",
    help=f"The catalog API's address, /v1 included (or set {URL_ENV}). https, or http on this machine.",
)
@click.option(
    "--timeout", type=click.FloatRange(min=1), default=30.0, show_default=True, help="Seconds to wait for an answer."
)
@click.option(
    "--retries",
    type=click.IntRange(0, 10),
    default=3,
    show_default=True,
    help="How often a rate-limited request (429) is retried, each after the wait the API asks for.",
)
@click.pass_context
def main(ctx: click.Context, base_url: str, timeout: float, retries: int) -> None:
    """Read the Credits ID catalog - profiles, credits, charts, tracks, albums, search and roles -
    with a secret API key (msk_…).

    The key comes from CREDITS_API_KEY, else from `credits login`. Every request counts once on
    the key's api_requests meter, as any REST call does; --all makes one request per page.

    Exit codes: 0 done, 1 server or network failure, 2 usage error (or the API's 400), 3 no key
    or key refused (401/403), 4 not found, 5 still rate limited after the retries."""
    ctx.obj = Settings(base_url, timeout, retries)


main.add_command(login.login)
main.add_command(login.logout)
for command in operations.COMMANDS:
    main.add_command(command)
