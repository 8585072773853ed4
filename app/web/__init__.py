"""The edges: blueprints, pages and forms, the /v1 and /embed views. Each request commits once."""
