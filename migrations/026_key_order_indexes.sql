-- compatible-with: 018_compact_posts_and_copies.sql
-- 026: the daily verify reads the accounts and each account's recorded copies in the order a
-- bucket listing gives their objects (S3 lists keys in byte order), and merges the two. The key
-- of an account's objects starts `media/<id>/`, of a copy's `media/<account>/<media>/`, so the
-- order is that of `id || '/'` (and `media_id || '/'`) compared byte by byte: COLLATE "C" (the
-- database's own collation may sort `-` and `_` otherwise, and `ab/` after `ab-c/` is byte order,
-- not the order of `ab` and `ab-c`). These indexes let those reads page by keyset without a sort.
-- Indexes only: the previous release's code neither sees nor needs them.
CREATE INDEX accounts_key_order ON accounts (((id || '/') COLLATE "C"));
CREATE INDEX media_copies_key_order ON media_copies (account_id, ((media_id || '/') COLLATE "C"), (slot COLLATE "C"));
