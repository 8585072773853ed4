"""WSGI entry point: `gunicorn wsgi:app`, and `flask` finds the app here (FLASK_APP=wsgi)."""

from app import create_app

app = create_app()
