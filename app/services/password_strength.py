"""How easily a new password could be guessed: zxcvbn, an offline estimator (no list leaves the
machine, nothing is looked up elsewhere), told the member's own words (address, name) and the
site's, so "casey.smith2024" is as weak for Casey as "password1" is for anyone.

A new password must score 3 of zxcvbn's 0-4 ("safely unguessable: moderate protection from an
offline attack on a slow hash" - and ours is argon2id). Length alone is not the rule: ten
characters of "aaaaaaaaaa" or "qwertyuiop" are refused, four ordinary words pass. The refusal
says why, in zxcvbn's words (a common password, a repeat, a date...), and what helps.

zxcvbn reads at most 72 characters (it refuses longer input); the first 72 of a longer password
are judged, which only errs on the safe side for a passphrase that grows past them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from zxcvbn import zxcvbn

MIN_SCORE = 3
CHECKED_LENGTH = 72
SITE_WORDS = ("credits", "creditsid", "credits id", "music", "credit")
LABELS = ("Very weak", "Weak", "Fair", "Strong", "Very strong")


@dataclass(frozen=True)
class Strength:
    """zxcvbn's verdict in the member's words: a score 0-4, a label, whether it is enough, and
    (when not) why and what to do."""

    score: int
    label: str
    acceptable: bool
    reason: str


def member_words(email: str | None = None, name: str | None = None) -> list[str]:
    """The words a guesser tries first for this member: their address (and its local part) and name."""
    words: list[str] = []
    if email:
        email = email.strip().lower()[:254]
        words += [email, email.split("@", 1)[0]]
    if name:
        words += [name.strip().lower()[:200], *name.lower().split()[:8]]
    return [w for w in words if w]


def estimate(password: str, user_inputs: Iterable[str] = ()) -> Strength:
    """The estimate of a password typed as a new one (an empty one scores 0)."""
    if not password:
        return Strength(0, LABELS[0], False, "Type a password.")
    result = zxcvbn(password[:CHECKED_LENGTH], user_inputs=[*SITE_WORDS, *user_inputs])
    score = int(result["score"])
    if score >= MIN_SCORE:
        return Strength(score, LABELS[score], True, "")
    feedback = result.get("feedback") or {}
    warning = (feedback.get("warning") or "").strip()
    suggestions = [s.strip() for s in feedback.get("suggestions") or [] if s.strip()]
    reason = "This password is too easy to guess"
    reason += f": {warning[0].lower()}{warning[1:]}" if warning else "."
    if not reason.endswith("."):
        reason += "."
    reason += " " + (
        " ".join(suggestions[:2]) if suggestions else "Add another word or two: uncommon words are better."
    )
    return Strength(score, LABELS[score], False, reason)


def weakness(password: str, user_inputs: Iterable[str] = ()) -> str | None:
    """None when the password is hard enough to guess; else the reason, to show the member."""
    strength = estimate(password, user_inputs)
    return None if strength.acceptable else strength.reason
