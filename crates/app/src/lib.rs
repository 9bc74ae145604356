//! The agentprocess process, below its surfaces: what the binaries share.
//!
//! - [`flags`]: every server flag with its `AGENTPROCESS_*` variable, turned by
//!   `from_args` into
//! - [`config`]: one typed configuration per binary ([`ApiConfig`],
//!   [`SchedulerConfig`]), every value checked at start, secrets wrapped;
//! - [`run`]: starting a process from it ([`Api::start`], [`run_scheduler`]);
//! - the pieces those use: [`mod@assemble`] (the service over its database and evidence
//!   store), [`mod@clock`], [`background`] work, [`health`] and the [`lifecycle`] of a
//!   server (serve, drain, stop).
//!
//! It knows no route but `/healthz`, `/readyz`, `/metrics` and the test clock: the
//! binaries build the HTTP surfaces over the [`Api`] it starts and hand them back to
//! [`Api::serve`], so a process that serves no web traffic (the scheduler) links none.

pub mod assemble;
pub mod background;
pub mod clock;
pub mod config;
pub mod flags;
pub mod health;
pub mod lifecycle;
mod observe;
pub mod run;

pub use assemble::{AssembleError, Extras, Storage, Unmigrated, assemble, observe_pool};
pub use background::{Background, spawn_background};
pub use clock::{clock, test_clock_route, with_test_clock};
pub use config::{ApiConfig, Database, HttpSettings, IdentityConfig, SchedulerConfig, Secret};
pub use health::readiness;
pub use lifecycle::{Draining, ProcessSettings, serve};
pub use run::{Api, run_scheduler};
