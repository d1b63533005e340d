-- compatible-with: 018_compact_posts_and_copies.sql
-- 023: an invitation the operator had feedmirror email to the owner (`feedmirror accounts invite
-- --owner-email … --send`, or "email it" on the dashboard's invite form) knows it was: to whom,
-- when, and how it left (through SMTP_URL, or written to OUTBOX_DIR when none is set, and so
-- not sent). The dashboard's list of invitations says so. NULL: it was not emailed (the link was
-- only shown to the operator, to copy). New nullable columns: the previous release neither reads
-- nor writes them and runs on unchanged.

ALTER TABLE invitations
  ADD COLUMN IF NOT EXISTS emailed_to text CHECK (emailed_to IS NULL OR length(emailed_to) BETWEEN 3 AND 254),
  ADD COLUMN IF NOT EXISTS emailed_at timestamptz,
  ADD COLUMN IF NOT EXISTS emailed_via text CHECK (emailed_via IS NULL OR emailed_via IN ('smtp', 'outbox'));
