"""Where the API key comes from: `CREDITS_API_KEY`, else the key `credits login` stored.

The stored key lives in the user's config directory (`$XDG_CONFIG_HOME/credits/api-key`, else
`~/.config/credits/api-key`), the directory mode 0700 and the file 0600, written whole or not at
all. The key is never printed, never put in a message: only its first characters, as the
console shows them, to tell keys apart.

Only secret keys (`msk_`) reach the catalog API. A publishable key (`mpk_`) is refused here,
before any request, with the reason, rather than sent to earn a 403."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path

from credits_cli.errors import Refused
from credits_cli.terminal import say

KEY_ENV = "CREDITS_API_KEY"
SECRET_PREFIX = "msk_"
PUBLISHABLE_PREFIX = "mpk_"
VISIBLE = 8  # characters after the prefix shown to tell keys apart (the console shows as many)
# The key's alphabet (base64url). Anything else is not a key, and could not go in a header.
KEY_CHARACTERS = re.compile(r"[A-Za-z0-9_-]{1,200}")
NO_KEY_HINT = f"Set {KEY_ENV}, or run `credits login` to store one."


def config_dir() -> Path:
    """The XDG base directory spec: `$XDG_CONFIG_HOME` when set to an absolute path."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "credits"


def key_file() -> Path:
    return config_dir() / "api-key"


def visible(key: str) -> str:
    """What may be shown of a key: its prefix and first characters (`msk_AbCdEfGh…`)."""
    return key[: len(SECRET_PREFIX) + VISIBLE] + "…"


def checked(value: str, source: str) -> str:
    """`value` if it looks like a secret key, else a refusal naming `source` (not the value)."""
    key = value.strip()
    if key.startswith(PUBLISHABLE_PREFIX):
        raise Refused(
            f"{source} is a publishable key (mpk_…): it serves browser widgets only, and the catalog API refuses it",
            "Use a secret key (msk_…), created in the console under API keys.",
        )
    if not key.startswith(SECRET_PREFIX) or not KEY_CHARACTERS.fullmatch(key[len(SECRET_PREFIX) :]):
        raise Refused(f"{source} is not a secret API key (msk_…)", NO_KEY_HINT)
    return key


def stored_key() -> str | None:
    """The key `credits login` stored, if any (a warning when others can read its file)."""
    path = key_file()
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        say(f"warning: {path} can be read by other users; `chmod 600 {path}` or run `credits login` again")
    return text.strip() or None


def current_key() -> str:
    """The key a command sends: the environment's, else the stored one, else a refusal."""
    from_env = os.environ.get(KEY_ENV)
    if from_env is not None and from_env.strip():
        return checked(from_env, KEY_ENV)
    stored = stored_key()
    if stored is not None:
        return checked(stored, str(key_file()))
    raise Refused("no API key", NO_KEY_HINT)


def store(key: str) -> Path:
    """Write `key` to the key file, mode 0600 in a 0700 directory: to a new file first, then
    renamed over the old one, so a reader never sees half a key or a looser mode."""
    directory = config_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)  # also when it existed with a looser mode
    path = key_file()
    handle, partial = tempfile.mkstemp(dir=directory, prefix=".api-key.")  # created 0600
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(key + "\n")
        Path(partial).replace(path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return path


def remove() -> Path | None:
    """Delete the stored key; its path, or None when there was none."""
    path = key_file()
    try:
        path.unlink()
    except FileNotFoundError:
        return None
    return path
