-- How many times a run's row was written since it was made. A write on PostgreSQL
-- reads the run without a lock and then updates it only if its revision is still the
-- one it read (a compare-and-set in the write's one statement); every other write
-- bumps it too, so no change can slip between a read and that update.
ALTER TABLE runs ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
