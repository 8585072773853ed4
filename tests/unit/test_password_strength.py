"""The new-password rule: zxcvbn's estimate, told the member's words; refused with a reason."""

from __future__ import annotations

import pytest

from app.services.members import MemberError, check_password_rules
from app.services.password_strength import MIN_SCORE, estimate, member_words, weakness


@pytest.mark.parametrize("weak", ["password123", "qwertyuiop", "aaaaaaaaaaaa", "1234567890", "Password2024!"])
def test_common_and_patterned_passwords_are_refused(weak):
    reason = weakness(weak)
    assert reason is not None and reason.startswith("This password is too easy to guess")


@pytest.mark.parametrize("good", ["correct horse battery staple", "a brand new passphrase", "kq3#Vz9!pL0w"])
def test_long_or_random_passwords_pass(good):
    assert weakness(good) is None and estimate(good).score >= MIN_SCORE


def test_the_members_own_words_are_guessable():
    words = member_words("robin.featherstonehaugh@example.test", "Robin Featherstonehaugh")
    assert weakness("featherstonehaugh1", words) is not None


def test_longer_than_zxcvbn_reads_is_judged_on_its_start():
    assert weakness("a" * 1024) is not None
    assert weakness("correct horse battery staple " * 30) is None


def test_the_service_rule_refuses_with_the_reason():
    with pytest.raises(MemberError, match="too easy to guess"):
        check_password_rules("password123", "x@example.test", "X")
    with pytest.raises(MemberError, match="at least 10 characters"):
        check_password_rules("short")
