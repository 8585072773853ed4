"""Bare extension singletons, bound to the app in create_app()."""

from typing import TYPE_CHECKING, ClassVar

from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect
from sqlalchemy import MetaData, Table
from sqlalchemy.orm import DeclarativeBase

# Named constraints so Alembic migrations are deterministic on SQLite and PostgreSQL alike.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    if TYPE_CHECKING:
        # every model here is mapped to one Table (no mapping to a join or a select)
        __table__: ClassVar[Table]


# Rows stay loaded after a commit: a request that wrote a row (a login session, a consent) and then
# renders or redirects with it would otherwise read it back. Each request has its own short-lived
# session (removed at teardown), so nothing stale outlives the request.
db = SQLAlchemy(model_class=Base, session_options={"expire_on_commit": False})
if TYPE_CHECKING:
    # What the models derive from, as a type checker sees it: Flask-SQLAlchemy makes `db.Model` at
    # run time (Base plus its session and table-name conveniences), which mypy cannot follow.
    Model = Base
else:
    Model = db.Model
migrate = Migrate(render_as_batch=True)
csrf = CSRFProtect()
# Storage comes from RATELIMIT_STORAGE_URI (Redis when REDIS_URL is set, so every process shares
# the counts). No default limits: only what is explicitly limited is counted.
limiter = Limiter(key_func=get_remote_address)
