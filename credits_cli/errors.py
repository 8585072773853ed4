"""How the client fails: one exit code per kind of failure, and one way to say it on stderr.

Scripts tell the failures apart by the exit code alone (docs/cli.md lists them):

  0  done
  1  the server failed (5xx), the network did, or the answer was not the API's
  2  a usage error: a bad option (click's own code) or the API's 400 (bad paging, bad search)
  3  refused: no key, not a secret key, or the API refused the key (401, 403)
  4  not found (404)
  5  rate limited: still 429 after the retries"""

from __future__ import annotations

from enum import IntEnum
from typing import IO, Any

import click


class Exit(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    REFUSED = 3
    NOT_FOUND = 4
    RATE_LIMITED = 5


class Failure(click.ClickException):
    """A command that cannot do what was asked: `credits: <message>` on stderr (then the hint,
    if any), and the exit code of its kind (one subclass per kind). Never carries the key."""

    exit_code = Exit.FAILED

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"credits: {self.format_message()}", err=True)
        if self.hint:
            click.echo(f"  {self.hint}", err=True)


class BadUsage(Failure):
    exit_code = Exit.USAGE


class Refused(Failure):
    exit_code = Exit.REFUSED


class NotFound(Failure):
    exit_code = Exit.NOT_FOUND


class RateLimited(Failure):
    exit_code = Exit.RATE_LIMITED
