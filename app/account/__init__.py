"""The member's account page (app.account.views) and the step before revoking an app (revoke_confirm)."""
