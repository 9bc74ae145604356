-- A run's large parts (its inputs, or one completion of a step, once it is large) are
-- kept apart from the run's row, one row each, written once and never changed: a write
-- to a large run then rewrites the small rest of it, not everything it ever recorded.
-- `runs.pieces` counts a run's pieces, so that a run with none is read in one statement.
CREATE TABLE run_pieces (
    org_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    piece BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (org_id, run_id, piece)
);
ALTER TABLE runs ADD COLUMN pieces BIGINT NOT NULL DEFAULT 0;
