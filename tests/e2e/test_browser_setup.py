"""The set-up's promise: a missing browser is a clear skip on a developer's machine and a
failure in CI, never a silent pass."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import browser_unavailable
from tests.interop.conftest import tool_unavailable


@pytest.mark.parametrize("unavailable", [browser_unavailable, tool_unavailable])
def test_missing_tool_skips_locally_and_fails_in_ci(monkeypatch, unavailable):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="Chromium not found"):
        unavailable("Chromium not found at /usr/bin/chromium")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        unavailable("Chromium not found at /usr/bin/chromium")
