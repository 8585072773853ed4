"""What the client writes besides its results: notes on stderr, a progress bar while paging (on a
terminal only), and catalog or server text made safe to print."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

# C0 and C1 controls (an escape sequence in a catalog name could rewrite the terminal) and the
# bidirectional overrides (which can make printed text read differently from what it is).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """`text` with every control character replaced by U+FFFD (newlines and tabs kept)."""
    return _UNSAFE.sub("\ufffd", text)


def say(message: str) -> None:
    """A note for the person at the terminal (retries, where the key went): stderr, never stdout."""
    click.echo(f"credits: {clean(message)}", err=True)


Progress = Callable[[int, int], None]


@contextmanager
def progress(label: str) -> Iterator[Progress | None]:
    """A progress bar on stderr while `--all` pages a list - only when stderr is a terminal, so
    a script's stderr carries nothing but errors. Yields `update(done, total)` or None."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True, highlight=False, markup=False, emoji=False),
        transient=True,
    )
    task = bar.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total, refresh=True)

    with bar:
        yield update
