"""`credits`: the command-line client of the Credits ID catalog API (`/v1`, `x-api-key`).

A REST client and nothing more: it never imports the provider (`app`), so it works installed on
its own against any base URL. One command per catalog operation (docs/catalog-api.md); every
request it sends counts once on the key's `api_requests` meter, as any REST call does."""
