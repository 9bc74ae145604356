-- The W3C traceparent of the call that set a timer or caused a notification, so that
-- firing the timer or delivering the notification continues that call's trace. NULL
-- when the call was not traced.
ALTER TABLE timers ADD COLUMN trace_parent TEXT;
ALTER TABLE notifications ADD COLUMN trace_parent TEXT;
