"""The floor: a Flask "hello" JSON endpoint, served by the same server settings as the provider.

Discovery and the key set are measured against it in the same run: an endpoint that serves
precomputed bytes cannot be cheaper than Flask itself answering a one-line JSON document.
Serve with `granian --interface wsgi bench.hello:app`.
"""

from flask import Flask, jsonify

app = Flask(__name__)


@app.get("/hello")
def hello():
    return jsonify(hello="world")
