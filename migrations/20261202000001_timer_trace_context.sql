-- The W3C traceparent of the call that set a timer, so that firing it continues
-- that call's trace. NULL when the call was not traced.
ALTER TABLE timers ADD COLUMN trace_parent TEXT;
