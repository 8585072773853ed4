"""The member's account page (app.account.views) and the step before revoking an app."""

from app.account import revoke_confirm  # noqa: F401 - registers its routes on the account blueprint
