-- A chat hook says which markup its chat reads (`slack` or `markdown`), so that each
-- value a message carries is escaped for it. A hook set before this has none and is
-- read by its URL (Slack's own hosts are Slack, any other Markdown).
ALTER TABLE chat_hooks ADD COLUMN kind TEXT;

-- A message's last error held the mail server's own reply, which names the platform's
-- mail relay (its host names, addresses and software) to the organization's admins.
-- They now read the class of failure in words, and operators the reply in the logs;
-- the replies kept so far give way to words that say no more.
UPDATE messages SET last_error = 'the mail server did not take the message'
WHERE channel = 'email' AND last_error LIKE 'the SMTP server did not take it%';
