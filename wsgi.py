"""WSGI entry point: granian serves `wsgi:app` (serve.py), and `flask` finds the app here (FLASK_APP=wsgi)."""

import sys

from app import create_app
from app.cli import asking_for_help, help_only_app
from app.core.config import ConfigError, refusal
from app.core.serving import settle_for_serving

try:
    app = create_app()
except ConfigError as exc:  # `flask ...` and the server: the settings to fix, not a traceback
    if not asking_for_help(sys.argv):
        raise refusal(exc) from None
    app = help_only_app(exc)  # `flask --help` works before anything is configured

# The start-up heap out of the collector's walks, logging's per-record look-ups off (app/core/serving.py).
settle_for_serving()
