"""The console: developers register and manage their apps; admins also manage keys, members
and read the audit trail. `bp` is registered by create_app."""

from app.web.console import admin, api_keys, billing, views  # noqa: F401 - the pages attach themselves to bp
from app.web.console.blueprint import bp

__all__ = ["bp"]
