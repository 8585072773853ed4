"""The hosted tool server: the catalog for AI agents over the Model Context Protocol (Streamable
HTTP, the official `mcp` SDK), on a port of its own, with the same key, limits and meter as `/v1`
(docs/tools.md).

  tools.py    the 12 tools: names, descriptions, input schemas, argument checks, the catalog reads
  callers.py  who is calling (a secret key, or a member's token for the tool server), behind one
              small interface: admit, settle
  door.py     the ASGI middleware in front of the endpoint: a Flask request context per request,
              the caller identified or refused (401, 403, 429), headers, one access line
  metadata.py the protected resource metadata (RFC 9728) an agent reads to sign a member in
  server.py   the SDK's low-level Server: list the tools, call one (budget, read, count)
  asgi.py     the ASGI app granian serves (serve.py), built per worker
"""
