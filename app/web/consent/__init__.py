"""The consent page: the app, and what it asks for in plain words."""
