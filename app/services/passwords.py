"""Password hashing: argon2id with configurable cost, rehashed on login when the cost changes."""

from __future__ import annotations

import contextlib

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from flask import Flask, current_app
from werkzeug.local import LocalProxy

from app.models import User


class Passwords:
    """One per app (in `app.core.extensions`), so each app hashes with its own configured cost."""

    def __init__(self, app: Flask) -> None:
        self._hasher = PasswordHasher(
            time_cost=int(app.config["ARGON2_TIME_COST"]),
            memory_cost=int(app.config["ARGON2_MEMORY_COST"]),
            parallelism=int(app.config["ARGON2_PARALLELISM"]),
        )
        # Verified against when the email is unknown, so both answers take the same time.
        self._dummy_hash = self._hasher.hash("credits-id timing equalizer")

    def hash(self, password: str) -> str:
        return self._hasher.hash(password)

    def verify(self, user: User | None, password: str) -> bool:
        """True when `password` is `user`'s. Upgrades the stored hash when parameters changed;
        the caller commits."""
        matches, upgraded = self.check(user.password_hash if user is not None else None, password)
        if user is not None and upgraded is not None:
            user.password_hash = upgraded
        return matches

    def check(self, stored_hash: str | None, password: str) -> tuple[bool, str | None]:
        """Whether `password` matches `stored_hash`, and the hash to store in its place when it
        matched under other parameters than the configured ones (else None). No stored hash (an
        unknown email) checks a dummy one, so both answers take the same time."""
        if stored_hash is None:
            with contextlib.suppress(VerificationError):
                self._hasher.verify(self._dummy_hash, password)
            return False, None
        try:
            self._hasher.verify(stored_hash, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False, None
        return True, self._hasher.hash(password) if self._hasher.check_needs_rehash(stored_hash) else None


def init_passwords(app: Flask) -> None:
    app.extensions["passwords"] = Passwords(app)


passwords: Passwords = LocalProxy(lambda: current_app.extensions["passwords"])  # type: ignore[assignment]
