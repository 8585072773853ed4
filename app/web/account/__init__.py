"""The member's account pages. Views (views, revoke_views, two_step_views) own each request's unit
of work and commit it once; the modules they call (connections, sessions) only read and flush."""
