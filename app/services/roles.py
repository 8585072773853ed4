"""What a member's role opens to them, said once, outside any one set of pages: the sign-in pages
(their link to the console) and the console (its door) ask the same question without importing
each other."""

from __future__ import annotations

from app.models import Role, User

CONSOLE_ROLES = (Role.DEVELOPER, Role.ADMIN)


def can_use_console(user: User | None) -> bool:
    """Developers and admins use the developer console; members do not."""
    return user is not None and user.role in CONSOLE_ROLES
