"""The input rules of app/core/input_rules.py, one at a time: path integers and JSON bodies."""

from __future__ import annotations

import pytest
from flask import Flask

from app.core.input_rules import INT64_MAX, IJsonProvider, Int64Converter, UnreadableJson


@pytest.fixture
def numbered():
    app = Flask(__name__)
    app.url_map.converters["int"] = Int64Converter

    @app.get("/n/<int:n>")
    def show(n: int) -> str:
        return str(n)

    return app.test_client()


@pytest.mark.parametrize("value", ["0", "7", "0042", str(INT64_MAX)])
def test_a_path_integer_within_64_bits_is_read(numbered, value):
    response = numbered.get(f"/n/{value}")
    assert response.status_code == 200 and response.text == str(int(value))


@pytest.mark.parametrize(
    "value",
    [str(INT64_MAX + 1), "9" * 19, "9" * 20, "9" * 5000, "-1", "%D9%A1%D9%A2", "1e3", "+1", "%201"],
    ids=[
        "int64 max + 1",
        "19 nines",
        "20 nines",
        "5000 digits",
        "negative",
        "Arabic-Indic digits",
        "exponent",
        "plus",
        "space",
    ],
)
def test_anything_else_matches_no_route(numbered, value):
    assert numbered.get(f"/n/{value}").status_code == 404


@pytest.fixture
def read():
    return IJsonProvider(Flask(__name__)).loads


def test_ijson_reads_ordinary_json(read):
    body = '{"keyword": "caf\\u00e9 \\ud83c\\udfb5", "type": ["track"], "n": -9223372036854775808, "f": 1.5e300}'
    assert read(body) == {"keyword": "café 🎵", "type": ["track"], "n": -(2**63), "f": 1.5e300}
    assert read(b'{"a": [[[]]]}') == {"a": [[[]]]}


@pytest.mark.parametrize(
    "body",
    [
        '"\\ud800"',
        '"\\udfff\\ud800"',
        b'"\xed\xa0\x80"',
        '{"\\ud800": 1}',
        '"a\\u0000b"',
        '{"a\\u0000": 1}',
        "NaN",
        "[Infinity]",
        "-Infinity",
        "1e999",
        str(2**63),
        str(-(2**63) - 1),
        "1" * 5000,
        '{"a": 1, "a": 2}',
        "[" * 33 + "]" * 33,
        "[" * 100_000 + "]" * 100_000,
        b'"\xff"',
        "{",
    ],
)
def test_ijson_refuses_what_consumers_read_differently(read, body):
    with pytest.raises(ValueError):
        read(body)


def test_nesting_up_to_the_limit_is_read(read):
    assert read("[" * 32 + "]" * 32) is not None
    with pytest.raises(UnreadableJson):
        read("[" * 33 + "]" * 33)


def test_the_reader_takes_no_options(read):
    with pytest.raises(TypeError):
        read("{}", object_hook=dict)


@pytest.mark.parametrize(
    "args",
    [
        ["users", "create", "--email", "cli@example.com", "--name", "X\udcffY"],  # `$'X\xffY'` on a UTF-8 terminal
        ["users", "set-tier", "a\udcff@example.com", "pro"],
        ["clients", "create", "--name", "A\x00pp", "--redirect-uri", "https://app.example/cb"],
        ["api-keys", "create", "--owner", "a@example.com", "--name", "\ud800"],
    ],
    ids=["undecodable name", "undecodable email", "NUL in a name", "lone surrogate"],
)
def test_commands_refuse_arguments_that_are_not_text(app, args):
    from sqlalchemy import func, select

    from app.core.extensions import db
    from app.models import Client, User

    result = app.test_cli_runner().invoke(args=args)
    assert result.exit_code == 2 and "not valid text" in result.output, (result.output, result.exception)
    assert db.session.scalar(select(func.count(User.id))) == 0
    assert db.session.scalar(select(func.count(Client.id))) == 0
