"""How sure we are of who signed in: the methods a sign-in used (RFC 8176 `amr`) and the level of
assurance they add up to (OIDC Core `acr`, REFEDS profiles). Read by the ID token, discovery, the
authorization endpoint and the second-factor pages alike, so it sits below all of them."""

from __future__ import annotations

SFA = "https://refeds.org/profile/sfa"  # acr: signed in with one factor
MFA = "https://refeds.org/profile/mfa"  # acr: signed in with two factors
ACR_VALUES = (SFA, MFA)
SECOND_FACTORS = {"otp", "hwk"}  # amr values that count as a second factor


def acr_for(amr: list[str]) -> str:
    """The assurance of a sign-in made with the methods `amr`."""
    return MFA if SECOND_FACTORS & set(amr) else SFA


def wants_mfa(acr_values: str | None) -> bool:
    """Whether an authorization request's `acr_values` asks for the multi-factor profile."""
    return MFA in (acr_values or "").split()
