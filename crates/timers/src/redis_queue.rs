//! The Redis adapter: one sorted set per partition, member = the timer, score = when
//! it is due in milliseconds. On one Redis server or a Redis Cluster: every command
//! touches one key, so a cluster routes each to the node that holds that partition.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use deadpool_redis::redis::cluster::{ClusterClient, ClusterClientBuilder};
use deadpool_redis::redis::cluster_async::ClusterConnection;
use deadpool_redis::redis::io::tcp::{TcpSettings, socket2};
use deadpool_redis::redis::{self, AsyncCommands as _, IntoConnectionInfo as _, Script};
use deadpool_redis::{PoolConfig, Runtime, Timeouts};
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
#[derive(Clone, PartialEq, Eq)]
pub struct RedisSettings {
    /// `redis://host:port/db` (or `rediss://…`); for a cluster, the address of one
    /// or more of its nodes, comma-separated.
    pub url: String,
    /// Whether `url` names a Redis Cluster.
    pub cluster: bool,
    /// Keys are `<prefix>:<partition>`, or `<prefix>:{<partition>}` on a cluster (a
    /// hash tag per partition, so each is one slot and the partitions spread over
    /// the nodes).
    pub prefix: String,
    /// How many sorted sets the timers are spread over, by organization, so a Redis
    /// Cluster can hold them on several nodes.
    pub partitions: u16,
    /// Connections in the pool.
    pub max_connections: usize,
    /// The longest any call may take, connecting included.
    pub timeout: Duration,
}

impl std::fmt::Debug for RedisSettings {
    /// Without the URL, which may carry a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSettings")
            .field("url", &"<hidden>")
            .field("cluster", &self.cluster)
            .field("prefix", &self.prefix)
            .field("partitions", &self.partitions)
            .field("max_connections", &self.max_connections)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl RedisSettings {
    /// Defaults for `url`: prefix `agentprocess:timers`, one partition, 16
    /// connections, 2 s per call.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            cluster: false,
            prefix: "agentprocess:timers".to_owned(),
            partitions: 1,
            max_connections: 16,
            timeout: Duration::from_secs(2),
        }
    }
}

/// How long Redis may leave sent data or keepalive probes unacknowledged before the
/// kernel closes the connection; probes start after this much idle time, and recur at
/// this interval. The same liveness as the database's sockets
/// (`agentprocess_store::keepalive`): a Redis whose connections went half-open (its
/// peer vanished without a word) fails calls within seconds instead of never.
const USER_TIMEOUT: Duration = Duration::from_secs(10);
const KEEPALIVE_IDLE: Duration = Duration::from_secs(5);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(2);

fn tcp_settings() -> TcpSettings {
    let settings = TcpSettings::default().set_nodelay(true).set_keepalive(
        socket2::TcpKeepalive::new()
            .with_time(KEEPALIVE_IDLE)
            .with_interval(KEEPALIVE_INTERVAL),
    );
    #[cfg(target_os = "linux")]
    let settings = settings.set_user_timeout(USER_TIMEOUT);
    settings
}

/// Connections to one server, or to a cluster.
enum Pool {
    Server(deadpool_redis::Pool),
    /// One cluster connection, multiplexed and cloned for each call: it keeps a
    /// connection to each node and routes each command by its key's slot. Made on
    /// first use, and again after a failure to make it.
    Cluster(Box<Cluster>),
}

/// A cluster's client and its one connection, made on first use.
struct Cluster {
    client: ClusterClient,
    connection: tokio::sync::OnceCell<ClusterConnection>,
}

/// A connection of either kind.
enum Connection {
    Server(deadpool_redis::Connection),
    Cluster(ClusterConnection),
}

impl redis::aio::ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            Connection::Server(connection) => connection.req_packed_command(cmd),
            Connection::Cluster(connection) => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Connection::Server(connection) => connection.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(connection) => connection.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Server(connection) => connection.get_db(),
            Connection::Cluster(connection) => connection.get_db(),
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
        let mut pool_config = PoolConfig::new(settings.max_connections.max(1));
        pool_config.timeouts = Timeouts {
            wait: Some(settings.timeout),
            create: Some(settings.timeout),
            recycle: Some(settings.timeout),
        };
        let pool = if settings.cluster {
            let nodes: Vec<&str> = settings.url.split(',').map(str::trim).collect();
            // One retry, within the call's time limit: a node that is down fails its
            // partitions' calls quickly instead of holding the others back.
            let client = ClusterClientBuilder::new(nodes)
                .tcp_settings(tcp_settings())
                .retries(1)
                .connection_timeout(settings.timeout / 4)
                .response_timeout(settings.timeout / 4)
                .build()
                .map_err(unavailable)?;
            Pool::Cluster(Box::new(Cluster {
                client,
                connection: tokio::sync::OnceCell::new(),
            }))
        } else {
            // Built from the connection's details rather than deadpool's `Config`,
            // which would drop the TCP settings.
            let info = settings
                .url
                .as_str()
                .into_connection_info()
                .map_err(unavailable)?
                .set_tcp_settings(tcp_settings());
            let manager = deadpool_redis::Manager::new(info).map_err(unavailable)?;
            Pool::Server(
                deadpool_redis::Pool::builder(manager)
                    .config(pool_config)
                    .runtime(Runtime::Tokio1)
                    .build()
                    .map_err(|error| QueueError::Unavailable(error.to_string()))?,
            )
        };
        let keys = (0..settings.partitions.max(1))
            .map(|partition| partition_key(&settings.prefix, partition, settings.cluster))
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

    async fn connection(&self) -> Result<Connection, QueueError> {
        match &self.pool {
            Pool::Server(pool) => pool
                .get()
                .await
                .map(Connection::Server)
                .map_err(|error| QueueError::Unavailable(error.to_string())),
            Pool::Cluster(cluster) => cluster
                .connection
                .get_or_try_init(|| cluster.client.get_async_connection())
                .await
                .map(|connection| Connection::Cluster(connection.clone()))
                .map_err(unavailable),
        }
    }

    /// The entries by the key of their partition, in a stable order.
    fn by_key<'a>(&'a self, entries: &'a [Entry]) -> std::collections::BTreeMap<&'a str, Vec<&'a Entry>> {
        let mut grouped: std::collections::BTreeMap<&str, Vec<&Entry>> = std::collections::BTreeMap::new();
        for entry in entries {
            grouped.entry(self.key_of(&entry.org)).or_default().push(entry);
        }
        grouped
    }

    /// `call` (Redis `operation`) within the time limit, in a span of its own. A call
    /// that timed out or lost its connection has the pool's idle connections dropped:
    /// what silenced one usually silenced its neighbours, and each would otherwise cost
    /// a later call its whole time limit to find out (the pool's check before reuse is
    /// bounded by the same limit). New ones cost a round trip each.
    async fn timed<T>(
        &self,
        operation: &'static str,
        call: impl Future<Output = Result<T, QueueError>>,
    ) -> Result<T, QueueError> {
        let result = tokio::time::timeout(self.timeout, call)
            .instrument(agentprocess_telemetry::spans::redis(operation))
            .await
            .unwrap_or(Err(QueueError::Timeout(self.timeout)));
        if let (Err(QueueError::Timeout(_) | QueueError::Unavailable(_)), Pool::Server(pool)) = (&result, &self.pool) {
            let dropped = pool.retain(|_, _| false).removed.len();
            if dropped > 0 {
                tracing::warn!(dropped, "a Redis call failed; the idle connections were dropped");
            }
        }
        result
    }

    /// One `ZADD` (with `option`, e.g. `NX`) per partition for every entry of it;
    /// returns how many members were new.
    async fn zadd(&self, entries: &[Entry], option: Option<&str>) -> Result<u64, QueueError> {
        if entries.is_empty() {
            return Ok(0);
        }
        let mut connection = self.connection().await?;
        let mut added = 0;
        let mut failed = None;
        for (key, entries) in self.by_key(entries) {
            let mut command = redis::cmd("ZADD");
            command.arg(key);
            if let Some(option) = option {
                command.arg(option);
            }
            for entry in entries {
                command.arg(entry.fire_at).arg(entry.member());
            }
            match command.query_async::<u64>(&mut connection).await {
                Ok(new) => added += new,
                Err(error) => failed = Some(unavailable(error)),
            }
        }
        failed.map_or(Ok(added), Err)
    }

    /// One `ZREM` per partition.
    async fn zrem(&self, entries: &[Entry]) -> Result<(), QueueError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut connection = self.connection().await?;
        let mut failed = None;
        for (key, entries) in self.by_key(entries) {
            let members: Vec<String> = entries.iter().map(|entry| entry.member()).collect();
            if let Err(error) = connection.zrem::<_, _, ()>(key, members).await {
                failed = Some(unavailable(error));
            }
        }
        failed.map_or(Ok(()), Err)
    }

    async fn take(&self, now: i64, limit: usize, hold_until: i64) -> Result<Vec<Entry>, QueueError> {
        let mut connection = self.connection().await?;
        let start = self.next_partition.fetch_add(1, Ordering::Relaxed);
        let mut taken = Vec::new();
        let mut answered = Answered::default();
        for offset in 0..self.keys.len() {
            let remaining = limit.saturating_sub(taken.len());
            if remaining == 0 {
                break;
            }
            let key = &self.keys[(start + offset) % self.keys.len()];
            let flat: Option<Vec<(String, i64)>> = answered.note(
                key,
                self.take_due
                    .key(key)
                    .arg(now)
                    .arg(remaining)
                    .arg(hold_until)
                    .invoke_async(&mut connection)
                    .await,
            );
            for (member, fire_at) in flat.unwrap_or_default() {
                taken.push(Entry::from_member(&member, fire_at)?);
            }
        }
        answered.or_failure(taken)
    }

    async fn earliest(&self) -> Result<Option<i64>, QueueError> {
        let mut connection = self.connection().await?;
        let mut earliest: Option<i64> = None;
        let mut answered = Answered::default();
        for key in &self.keys {
            let first: Option<Vec<(String, i64)>> = answered.note(key, connection.zrange_withscores(key, 0, 0).await);
            if let Some((_, score)) = first.as_deref().and_then(<[_]>::first) {
                earliest = Some(earliest.map_or(*score, |at| at.min(*score)));
            }
        }
        answered.or_failure(earliest)
    }

    async fn total(&self) -> Result<u64, QueueError> {
        let mut connection = self.connection().await?;
        let mut total = 0;
        let mut answered = Answered::default();
        for key in &self.keys {
            total += answered.note(key, connection.zcard(key).await).unwrap_or(0_u64);
        }
        answered.or_failure(total)
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

/// Whether the partitions answered. A call over every partition goes on past one that
/// fails (its cluster node down, say), so the timers of the others still fire; it
/// fails only if none answered.
#[derive(Default)]
struct Answered {
    some: bool,
    failure: Option<QueueError>,
}

impl Answered {
    fn note<T>(&mut self, key: &str, result: redis::RedisResult<T>) -> Option<T> {
        match result {
            Ok(value) => {
                self.some = true;
                Some(value)
            }
            Err(error) => {
                tracing::warn!(%error, key, "a timer partition did not answer");
                self.failure = Some(unavailable(error));
                None
            }
        }
    }

    fn or_failure<T>(self, value: T) -> Result<T, QueueError> {
        match self.failure {
            Some(failure) if !self.some => Err(failure),
            _ => Ok(value),
        }
    }
}

/// The key of one partition: on a cluster, the partition number is the hash tag, so
/// the key's slot depends on it alone.
fn partition_key(prefix: &str, partition: u16, cluster: bool) -> String {
    if cluster {
        format!("{prefix}:{{{partition}}}")
    } else {
        format!("{prefix}:{partition}")
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

#[cfg(test)]
mod tests {
    use super::partition_key;

    #[test]
    fn a_cluster_key_is_tagged_by_its_partition() {
        assert_eq!(partition_key("agentprocess:timers", 3, false), "agentprocess:timers:3");
        assert_eq!(partition_key("agentprocess:timers", 3, true), "agentprocess:timers:{3}");
    }
}
