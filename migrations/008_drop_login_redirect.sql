-- 008: login states no longer carry a place to go after the login (the redirect_after feature was
-- never used: every login ends on the callback's own page). Never edit once released.
ALTER TABLE login_states DROP COLUMN redirect_after;
