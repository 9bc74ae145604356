//! Timer queues for the scheduler.
//!
//! The timer rows in the database are the source of truth; a queue only mirrors them
//! so the scheduler can find what is due without scanning the table. Losing a queue
//! entry (a flush, a restart, an add that never arrived) delays a timer until the
//! scheduler's reconciler re-adds it from the rows; it never loses it. Firing an entry
//! twice has one effect, because the scheduler applies a timer only by removing its
//! row under the run's lock.
//!
//! [`RedisQueue`] keeps the entries in Redis sorted sets, scored by when they are due.

mod redis_queue;

use std::future::Future;
use std::pin::Pin;

pub use redis_queue::{RedisQueue, RedisSettings};

/// One timer in a queue: which run's which timer, and when it is due.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The organization.
    pub org: String,
    /// The run.
    pub run_id: String,
    /// The engine's timer id.
    pub timer_id: String,
    /// When it is due, in milliseconds since the Unix epoch.
    pub fire_at: i64,
}

impl Entry {
    /// The queue member naming this timer (without its time): a JSON array, so no
    /// id can be confused with another whatever characters it holds.
    pub fn member(&self) -> String {
        serde_json::Value::from(vec![self.org.as_str(), self.run_id.as_str(), self.timer_id.as_str()]).to_string()
    }

    /// The entry a member names, due at `fire_at`.
    pub fn from_member(member: &str, fire_at: i64) -> Result<Self, QueueError> {
        let parts: Vec<String> = serde_json::from_str(member).map_err(|_| QueueError::Corrupt(member.to_owned()))?;
        let [org, run_id, timer_id]: [String; 3] =
            parts.try_into().map_err(|_| QueueError::Corrupt(member.to_owned()))?;
        Ok(Self {
            org,
            run_id,
            timer_id,
            fire_at,
        })
    }
}

/// Why a queue call failed. The scheduler logs it and tries again; the timer rows
/// are untouched.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The queue's server refused or could not be reached.
    #[error("timer queue unavailable: {0}")]
    Unavailable(String),
    /// The queue's server did not answer in time.
    #[error("timer queue did not answer within {0:?}")]
    Timeout(std::time::Duration),
    /// A member no queue of ours wrote.
    #[error("timer queue holds a member that names no timer: {0}")]
    Corrupt(String),
}

/// What queue calls return.
pub type QueueFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, QueueError>> + Send + 'a>>;

/// A queue of timers, shared by any number of API processes (which add) and
/// schedulers (which take).
pub trait TimerQueue: Send + Sync + 'static {
    /// Adds entries, or moves them to their new time.
    fn add<'a>(&'a self, entries: &'a [Entry]) -> QueueFuture<'a, ()>;

    /// Adds the entries that are not in the queue and returns how many that was;
    /// leaves the others (including ones a scheduler holds) as they are. The
    /// reconciler's call.
    fn restore<'a>(&'a self, entries: &'a [Entry]) -> QueueFuture<'a, u64>;

    /// Removes entries: once applied, or when cancelled.
    fn remove<'a>(&'a self, entries: &'a [Entry]) -> QueueFuture<'a, ()>;

    /// Takes up to `limit` entries due at `now`, in one atomic step per partition, and
    /// hides them from other callers until `hold_until`: a scheduler that dies before
    /// removing them lets them come back then. Entries come with their due time.
    fn take_due(&self, now: i64, limit: usize, hold_until: i64) -> QueueFuture<'_, Vec<Entry>>;

    /// When the earliest entry is due (held ones included), if any.
    fn next_due(&self) -> QueueFuture<'_, Option<i64>>;

    /// How many entries the queue holds.
    fn count(&self) -> QueueFuture<'_, u64>;

    /// Whether the queue's server answers.
    fn ping(&self) -> QueueFuture<'_, ()>;
}
