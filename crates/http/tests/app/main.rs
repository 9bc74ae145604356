//! The router in process, on SQLite and on PostgreSQL: the write path (replay,
//! conflict, refused then retried, the run lock) and the REST surface.

mod admin_pages;
mod agent_bindings;
mod checks;
mod deadline;
mod direct;
mod harness;
mod hook_urls;
mod idempotency;
mod limits;
mod messages;
mod oauth;
mod older_versions;
mod people_oauth;
mod platform;
mod policies;
mod proxies;
mod reseal;
mod rest;
mod web;
mod writes;
