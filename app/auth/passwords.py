"""Password hashing: argon2id with configurable cost, rehashed on login when the cost changes."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from flask import Flask, current_app
from werkzeug.local import LocalProxy

from app.models import User


class Passwords:
    """One per app (in `app.extensions`), so each app hashes with its own configured cost."""

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
        if user is None:
            try:
                self._hasher.verify(self._dummy_hash, password)
            except VerificationError:
                pass
            return False
        try:
            self._hasher.verify(user.password_hash, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
        if self._hasher.check_needs_rehash(user.password_hash):
            user.password_hash = self._hasher.hash(password)
        return True


def init_passwords(app: Flask) -> None:
    app.extensions["passwords"] = Passwords(app)


passwords: Passwords = LocalProxy(lambda: current_app.extensions["passwords"])  # type: ignore[assignment]
