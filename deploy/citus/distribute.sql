-- Distributes agentprocess's tables on a Citus cluster (docs/operations.md,
-- "Scaling past one database"). Run once on the coordinator, as a superuser, after
-- `agentprocess-api migrate` and before any data:
--   psql "$COORDINATOR_URL" -v ON_ERROR_STOP=1 -f deploy/citus/distribute.sql
--
-- The directory (what a credential or a global id finds before the organization is
-- known) becomes reference tables, copied to every node. Every table of an
-- organization's work is distributed by org_id; all of them hash the same TEXT
-- column into the same shard count, so Citus colocates them and one organization's
-- rows of every table sit on one node. tests/statements/test_rule.py holds that this
-- list is the migrations' list.
SELECT create_reference_table('organizations');
SELECT create_reference_table('org_domains');
SELECT create_reference_table('access_tokens');
SELECT create_reference_table('sessions');
SELECT create_reference_table('oauth_clients');
SELECT create_reference_table('oauth_client_secrets');
SELECT create_reference_table('oauth_apps');
SELECT create_reference_table('oauth_grants');
SELECT create_reference_table('oauth_codes');
SELECT create_reference_table('oauth_refresh_tokens');
SELECT create_reference_table('oauth_assertions');
SELECT create_distributed_table('agent_bindings', 'org_id');
SELECT create_distributed_table('audit_log', 'org_id');
SELECT create_distributed_table('chat_hooks', 'org_id');
SELECT create_distributed_table('deliveries', 'org_id');
SELECT create_distributed_table('drafts', 'org_id');
SELECT create_distributed_table('idempotency', 'org_id');
SELECT create_distributed_table('identities', 'org_id');
SELECT create_distributed_table('identity_providers', 'org_id');
SELECT create_distributed_table('memberships', 'org_id');
SELECT create_distributed_table('message_choices', 'org_id');
SELECT create_distributed_table('messages', 'org_id');
SELECT create_distributed_table('notifications', 'org_id');
SELECT create_distributed_table('open_versions', 'org_id');
SELECT create_distributed_table('org_groups', 'org_id');
SELECT create_distributed_table('org_limits', 'org_id');
SELECT create_distributed_table('org_policies', 'org_id');
SELECT create_distributed_table('person_logins', 'org_id');
SELECT create_distributed_table('process_versions', 'org_id');
SELECT create_distributed_table('run_inputs', 'org_id');
SELECT create_distributed_table('run_pieces', 'org_id');
SELECT create_distributed_table('runs', 'org_id');
SELECT create_distributed_table('timers', 'org_id');
SELECT create_distributed_table('uploads', 'org_id');
SELECT create_distributed_table('webhooks', 'org_id');
SELECT create_distributed_table('work_index', 'org_id');
