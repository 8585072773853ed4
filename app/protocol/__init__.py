"""The protocol: OAuth 2.0 and OpenID Connect endpoints, their decisions, and the protocol store.

Nothing in here imports a page, the data API or the CLI (pyproject.toml, import-linter)."""
