"""bench/forgot_timing.py times as many member requests as stranger requests, every one answered
200, and prints both medians and their ratio. The figures themselves are not asserted: speed is
for benchmarks, not tests."""

from __future__ import annotations

import re

from bench import forgot_timing


def test_members_and_strangers_are_timed_alike(capsys):
    forgot_timing.main(["--n", "3"])
    out = capsys.readouterr().out
    counts = dict(re.findall(r"(member|stranger) +median +[\d.]+ ms .*\(n=(\d+)\)", out))
    assert counts == {"member": "3", "stranger": "3"}, out
    assert re.search(r"member / stranger \(medians\): [\d.]+", out), out
