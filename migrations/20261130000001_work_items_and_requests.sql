-- `get_work` for agents answers from the index alone: a ready agent step's row holds
-- the item the engine made for it when the run was last written (NULL for a claimed
-- step, whose item, once its lease ends, carries the progress the claim left).
ALTER TABLE work_index ADD COLUMN item TEXT;

-- Idempotency rows are now written once, with their result, at the end of the write
-- that made them; `result` is never NULL in new rows.
