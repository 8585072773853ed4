"""python -m examples.demo_app: the demo relying party on http://127.0.0.1:5001."""

import os

from examples.demo_app import create_app

if __name__ == "__main__":
    port = int(os.environ.get("DEMO_PORT", "5001"))
    try:
        app = create_app()
    except RuntimeError as exc:  # a start-up refusal (no client secret): one line, not a traceback
        raise SystemExit(f"liner-notes demo: {exc}") from None
    app.run(host="127.0.0.1", port=port)
