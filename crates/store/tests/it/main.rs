//! The store's suite, run against both databases: each test runs once on a fresh
//! SQLite file and once on a fresh PostgreSQL database of the machine's server.

mod concurrency;
mod directory;
mod fair;
mod limits;
mod messages;
mod open_versions;
mod pieces;
mod retention;
mod rows;
mod silence;
mod support;
mod writes;
