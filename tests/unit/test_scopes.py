from app.core.scopes import claims_for, grantable, known_scopes, scope_list, tier_allows
from app.services.consent import decide_granted, missing_scopes


def test_analytics_needs_pro_and_everything_else_is_open():
    assert tier_allows("analytics:read", "pro")
    assert not tier_allows("analytics:read", "basic")
    assert not tier_allows("analytics:read", "unknown-tier")
    for scope in ("openid", "profile", "email", "offline_access", "credits:read"):
        assert tier_allows(scope, "basic")


def test_scope_lists_keep_order_and_drop_duplicates_and_unknowns():
    assert scope_list("openid  email openid") == ["openid", "email"]
    assert known_scopes("openid bogus credits:read") == ["openid", "credits:read"]
    assert grantable(["openid", "analytics:read"], "basic") == ["openid"]


def test_claims_follow_the_scope_table():
    assert claims_for(["openid"]) == {"sub"}
    assert claims_for(["profile", "email"]) == {"name", "email", "email_verified"}
    assert claims_for(["credits:read", "offline_access"]) == set()


def test_partial_consent_keeps_openid_and_respects_the_plan():
    requested = ["openid", "profile", "email", "analytics:read"]
    assert decide_granted(requested, ["email"], "basic") == ["openid", "email"]
    assert decide_granted(requested, [], "pro") == ["openid"]
    assert decide_granted(requested, None, "pro") == requested
    assert decide_granted(requested, None, "basic") == ["openid", "profile", "email"]


def test_missing_scopes_is_what_a_remembered_consent_does_not_cover():
    assert missing_scopes(["openid", "email"], ["openid", "email", "profile"]) == []
    assert missing_scopes(["openid", "credits:read"], ["openid"]) == ["credits:read"]
