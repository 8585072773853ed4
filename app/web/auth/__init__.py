"""The sign-in's pages: the login page, the second step and passkeys, forgot password, mailed links, an app's sign-out."""
