//! The Redis adapter: one sorted set per partition, member = the timer, score = when
//! it is due in milliseconds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use deadpool_redis::redis::{self, AsyncCommands as _, Script};
use deadpool_redis::{Config, Pool, PoolConfig, Runtime, Timeouts};
use tracing::Instrument as _;

use crate::{Entry, QueueError, QueueFuture, TimerQueue};

/// Takes the due members of one set and re-scores them to the hold time, atomically:
/// two schedulers never take one member at once, and a member whose scheduler died
/// is due again at the hold time.
const TAKE_DUE: &str = r"
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
for i = 1, #due, 2 do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[3], due[i])
end
return due
";

/// How to reach Redis and lay out the keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisSettings {
    /// `redis://host:port/db` (or `rediss://…`).
    pub url: String,
    /// Keys are `<prefix>:<partition>`.
    pub prefix: String,
    /// How many sorted sets the timers are spread over, by organization, so a Redis
    /// Cluster can hold them on several nodes.
    pub partitions: u16,
    /// Connections in the pool.
    pub max_connections: usize,
    /// The longest any call may take, connecting included.
    pub timeout: Duration,
}

impl RedisSettings {
    /// Defaults for `url`: prefix `agentprocess:timers`, one partition, 16
    /// connections, 2 s per call.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prefix: "agentprocess:timers".to_owned(),
            partitions: 1,
            max_connections: 16,
            timeout: Duration::from_secs(2),
        }
    }
}

/// Timers in Redis sorted sets.
pub struct RedisQueue {
    pool: Pool,
    keys: Vec<String>,
    timeout: Duration,
    take_due: Script,
    /// The partition the next `take_due` starts from, so none is starved.
    next_partition: AtomicUsize,
}

impl std::fmt::Debug for RedisQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisQueue")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl RedisQueue {
    /// A queue over `settings`. Connects lazily: a Redis that is down now only makes
    /// calls fail until it is back.
    pub fn new(settings: &RedisSettings) -> Result<Self, QueueError> {
        let mut config = Config::from_url(settings.url.clone());
        let mut pool = PoolConfig::new(settings.max_connections.max(1));
        pool.timeouts = Timeouts {
            wait: Some(settings.timeout),
            create: Some(settings.timeout),
            recycle: Some(settings.timeout),
        };
        config.pool = Some(pool);
        let pool = config
            .create_pool(Some(Runtime::Tokio1))
            .map_err(|error| QueueError::Unavailable(error.to_string()))?;
        let keys = (0..settings.partitions.max(1))
            .map(|partition| format!("{}:{partition}", settings.prefix))
            .collect();
        Ok(Self {
            pool,
            keys,
            timeout: settings.timeout,
            take_due: Script::new(TAKE_DUE),
            next_partition: AtomicUsize::new(0),
        })
    }

    /// The key of the partition holding an organization's timers.
    fn key_of(&self, org: &str) -> &str {
        // FNV-1a: stable across processes and releases, unlike the std hasher.
        let hash = org.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
        let index = usize::try_from(hash % self.keys.len() as u64).unwrap_or(0);
        &self.keys[index]
    }

    async fn connection(&self) -> Result<deadpool_redis::Connection, QueueError> {
        self.pool
            .get()
            .await
            .map_err(|error| QueueError::Unavailable(error.to_string()))
    }

    /// Runs `call` with the queue's time limit.
    /// `call` (Redis `operation`) within the time limit, in a span of its own.
    async fn timed<T>(
        &self,
        operation: &'static str,
        call: impl Future<Output = Result<T, QueueError>>,
    ) -> Result<T, QueueError> {
        tokio::time::timeout(self.timeout, call)
            .instrument(agentprocess_telemetry::spans::redis(operation))
            .await
            .map_err(|_| QueueError::Timeout(self.timeout))?
    }

    /// One pipeline of `ZADD` (with `option`, e.g. `NX`) for every entry; returns how
    /// many members were new.
    async fn zadd(&self, entries: &[Entry], option: Option<&str>) -> Result<u64, QueueError> {
        if entries.is_empty() {
            return Ok(0);
        }
        let mut pipe = redis::pipe();
        for entry in entries {
            let mut command = redis::cmd("ZADD");
            command.arg(self.key_of(&entry.org));
            if let Some(option) = option {
                command.arg(option);
            }
            command.arg(entry.fire_at).arg(entry.member());
            pipe.add_command(command);
        }
        let mut connection = self.connection().await?;
        let added: Vec<u64> = pipe.query_async(&mut connection).await.map_err(unavailable)?;
        Ok(added.iter().sum())
    }

    async fn zrem(&self, entries: &[Entry]) -> Result<(), QueueError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for entry in entries {
            pipe.zrem(self.key_of(&entry.org), entry.member()).ignore();
        }
        let mut connection = self.connection().await?;
        pipe.query_async::<()>(&mut connection).await.map_err(unavailable)
    }

    async fn take(&self, now: i64, limit: usize, hold_until: i64) -> Result<Vec<Entry>, QueueError> {
        let mut connection = self.connection().await?;
        let start = self.next_partition.fetch_add(1, Ordering::Relaxed);
        let mut taken = Vec::new();
        for offset in 0..self.keys.len() {
            let remaining = limit.saturating_sub(taken.len());
            if remaining == 0 {
                break;
            }
            let key = &self.keys[(start + offset) % self.keys.len()];
            let flat: Vec<(String, i64)> = self
                .take_due
                .key(key)
                .arg(now)
                .arg(remaining)
                .arg(hold_until)
                .invoke_async(&mut connection)
                .await
                .map_err(unavailable)?;
            for (member, fire_at) in flat {
                taken.push(Entry::from_member(&member, fire_at)?);
            }
        }
        Ok(taken)
    }

    async fn earliest(&self) -> Result<Option<i64>, QueueError> {
        let mut connection = self.connection().await?;
        let mut earliest: Option<i64> = None;
        for key in &self.keys {
            let first: Vec<(String, i64)> = connection.zrange_withscores(key, 0, 0).await.map_err(unavailable)?;
            if let Some((_, score)) = first.first() {
                earliest = Some(earliest.map_or(*score, |at| at.min(*score)));
            }
        }
        Ok(earliest)
    }

    async fn total(&self) -> Result<u64, QueueError> {
        let mut connection = self.connection().await?;
        let mut total = 0;
        for key in &self.keys {
            let count: u64 = connection.zcard(key).await.map_err(unavailable)?;
            total += count;
        }
        Ok(total)
    }

    async fn answer(&self) -> Result<(), QueueError> {
        let mut connection = self.connection().await?;
        redis::cmd("PING")
            .query_async::<String>(&mut connection)
            .await
            .map(drop)
            .map_err(unavailable)
    }
}

fn unavailable(error: redis::RedisError) -> QueueError {
    QueueError::Unavailable(error.to_string())
}

impl TimerQueue for RedisQueue {
    fn add<'a>(&'a self, entries: &'a [Entry]) -> QueueFuture<'a, ()> {
        Box::pin(self.timed("ZADD", async { self.zadd(entries, None).await.map(drop) }))
    }

    fn restore<'a>(&'a self, entries: &'a [Entry]) -> QueueFuture<'a, u64> {
        Box::pin(self.timed("ZADD", self.zadd(entries, Some("NX"))))
    }

    fn remove<'a>(&'a self, entries: &'a [Entry]) -> QueueFuture<'a, ()> {
        Box::pin(self.timed("ZREM", self.zrem(entries)))
    }

    fn take_due(&self, now: i64, limit: usize, hold_until: i64) -> QueueFuture<'_, Vec<Entry>> {
        Box::pin(self.timed("EVALSHA", self.take(now, limit, hold_until)))
    }

    fn next_due(&self) -> QueueFuture<'_, Option<i64>> {
        Box::pin(self.timed("ZRANGE", self.earliest()))
    }

    fn count(&self) -> QueueFuture<'_, u64> {
        Box::pin(self.timed("ZCARD", self.total()))
    }

    fn ping(&self) -> QueueFuture<'_, ()> {
        Box::pin(self.timed("PING", self.answer()))
    }
}
