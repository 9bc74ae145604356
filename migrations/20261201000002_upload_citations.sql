-- When a submission or decision first cited an upload. Uploads never cited are
-- removed (row and stored bytes) once older than the configured retention; cited ones
-- are kept as long as the runs that cite them.
ALTER TABLE uploads ADD COLUMN cited_at BIGINT;
CREATE INDEX uploads_uncited ON uploads (created_at) WHERE cited_at IS NULL;
