//! Connections lent from the pool and taken back without a round trip.
//!
//! sqlx 0.8 tests every connection given back to its pool with a round trip (a `Sync`
//! and the server's `ReadyForQuery`), whatever the connection did: in the agent loop,
//! once the writes were one statement each, that was every other round trip. The test
//! is there for connections left mid-way: a transaction dropped unfinished (its
//! `ROLLBACK` is queued, and sent only by the next round trip, so its locks would be
//! held meanwhile) or a statement abandoned before its answer.
//!
//! So on PostgreSQL a connection that comes back clean (no transaction open, no
//! connection lost under a statement since it was lent, and no abandoned work
//! suspected: [`Health::suspected`]) is kept here, still checked out of
//! sqlx's pool, and lent again as it is. Any other goes back to sqlx's pool, whose
//! release sends the queued `ROLLBACK` and whose hooks check it. A statement abandoned
//! on a kept connection is harmless to the next borrower: sqlx reads the rest of its
//! answer before the next statement.
//!
//! A borrower that finds nothing kept waits for whichever comes first: a connection
//! given back, or one from the pool. Below its size the pool opens one for that, and
//! when one given back comes first the opening goes on and its connection is kept:
//! dropped half-opened, it was a backend started and torn down for nothing, again and
//! again under load, and the pool never grew.
//!
//! A kept connection idle for a while is checked before it is lent
//! ([`Health::before_use`], as the pool checks its own idle connections); while
//! connections are suspected, the kept ones all go back to the pool. SQLite's one
//! connection is never kept.

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Connection as _, Database, TransactionManager as _};
use tokio::sync::oneshot;

use crate::health::{self, Health};

/// The connections kept between loans, and the borrowers waiting for one.
#[derive(Debug)]
pub(crate) struct Spare {
    state: Mutex<State>,
    health: Health,
    keeps: bool,
}

#[derive(Debug, Default)]
struct State {
    /// Most recently given back last, each with when, and how many connections had
    /// been lost under a statement by then ([`health::lost_count`]).
    kept: Vec<(PoolConnection<Any>, Instant, u64)>,
    /// Borrowers waiting, oldest first: a connection given back goes to the oldest
    /// one still waiting, so none waits behind borrowers who came later.
    waiting: VecDeque<oneshot::Sender<PoolConnection<Any>>>,
    /// The pool is closing: nothing is kept any more.
    closed: bool,
}

impl Spare {
    /// `keeps`: whether clean connections are kept (PostgreSQL).
    pub(crate) fn new(health: Health, keeps: bool) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::default()),
            health,
            keeps,
        })
    }

    /// A connection: a kept one if there is one, else the first of one given back and
    /// one from `pool`.
    pub(crate) async fn lend(self: &Arc<Self>, pool: &AnyPool) -> Result<Lent, sqlx::Error> {
        // Nothing is ever kept to hand over: the pool's own queue is the only one.
        if !self.keeps {
            return Ok(self.lent(pool.acquire().await?));
        }
        if self.health.suspected() {
            self.give_all_back();
        }
        loop {
            let waiting = {
                let Ok(mut state) = self.state.lock() else {
                    break;
                };
                match state.kept.pop() {
                    Some(kept) => Err(kept),
                    None => {
                        // Borrowers who got one from the pool meanwhile wait no more.
                        state.waiting.retain(|waiting| !waiting.is_closed());
                        let (handing, waiting) = oneshot::channel();
                        state.waiting.push_back(handing);
                        Ok(waiting)
                    }
                }
            };
            match waiting {
                Err((mut connection, since, lost)) => {
                    let mut checked = self.health.before_use(&mut connection, since.elapsed()).await;
                    // A connection lost since this one was kept may have been this one.
                    if checked.is_ok() && health::lost_count() != lost {
                        checked = self.health.check(&mut connection).await;
                    }
                    match checked {
                        Ok(()) => return Ok(self.lent(connection)),
                        Err(_) => connection.close_on_drop(),
                    }
                }
                // Whichever comes first; a connection handed to a borrower that went
                // to the pool instead goes on to the next (see `keep`).
                Ok(waiting) => {
                    // Below its size the pool opens a connection for the acquire,
                    // which is not dropped half-opened (see the module's docs).
                    let opens = pool.size() < pool.options().get_max_connections();
                    let mut acquiring = Box::pin(pool.acquire());
                    return tokio::select! {
                        handed = waiting => {
                            if opens {
                                self.keep_when_acquired(acquiring);
                            }
                            match handed {
                                Ok(connection) => Ok(self.lent(connection)),
                                Err(_) => continue,
                            }
                        }
                        acquired = &mut acquiring => Ok(self.lent(acquired?)),
                    };
                }
            }
        }
        Ok(self.lent(pool.acquire().await?))
    }

    /// Lets an acquire given up by its borrower finish, and keeps (or hands on) what it
    /// brings; the pool's acquire timeout bounds how long it waits.
    fn keep_when_acquired(
        self: &Arc<Self>,
        acquiring: impl Future<Output = Result<PoolConnection<Any>, sqlx::Error>> + Send + 'static,
    ) {
        let spare = Arc::clone(self);
        tokio::spawn(async move {
            if let Ok(connection) = acquiring.await {
                spare.keep(connection);
            }
        });
    }

    /// How many borrowers wait now.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.state.lock().map_or(0, |state| state.waiting.len())
    }

    /// How many connections are kept now.
    pub(crate) fn len(&self) -> usize {
        self.state.lock().map_or(0, |state| state.kept.len())
    }

    /// Gives every kept connection back to the pool and keeps none from now on: the
    /// pool's close waits for every connection checked out of it, and a connection
    /// still opening for a borrower served meanwhile (see the module's docs) would
    /// otherwise be kept after the close began, and the close never end.
    pub(crate) fn close(&self) {
        // Marked first: from then on `keep` keeps nothing, so none is kept after these.
        if let Ok(mut state) = self.state.lock() {
            state.closed = true;
        }
        self.give_all_back();
    }

    /// Gives every kept connection back to the pool (each is checked there).
    pub(crate) fn give_all_back(&self) {
        let kept = match self.state.lock() {
            Ok(mut state) => std::mem::take(&mut state.kept),
            Err(_) => return,
        };
        drop(kept);
    }

    fn lent(self: &Arc<Self>, connection: PoolConnection<Any>) -> Lent {
        Lent {
            connection: Some(connection),
            spare: Arc::clone(self),
            unfinished: false,
            lost: health::lost_count(),
        }
    }

    /// To the oldest borrower still waiting, else kept; once the pool is closing,
    /// back to it.
    fn keep(&self, mut connection: PoolConnection<Any>) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if state.closed {
            return;
        }
        while let Some(waiting) = state.waiting.pop_front() {
            match waiting.send(connection) {
                Ok(()) => return,
                // That borrower got one from the pool, or went away.
                Err(returned) => connection = returned,
            }
        }
        state.kept.push((connection, Instant::now(), health::lost_count()));
    }
}

/// A connection lent by [`Spare::lend`]; given back when dropped.
#[derive(Debug)]
pub(crate) struct Lent {
    connection: Option<PoolConnection<Any>>,
    spare: Arc<Spare>,
    /// Something was left mid-way (a transaction dropped unfinished): only the pool's
    /// release can settle it.
    unfinished: bool,
    /// [`health::lost_count`] when it was lent: if a connection was lost under a
    /// statement since, it may have been this one, and the pool's release checks it.
    lost: u64,
}

impl Deref for Lent {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        self.connection
            .as_ref()
            .expect("a lent connection until it is given back")
    }
}

impl DerefMut for Lent {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        self.connection
            .as_mut()
            .expect("a lent connection until it is given back")
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let Some(connection) = self.connection.take() else {
            return;
        };
        let clean = !self.unfinished && !connection.is_in_transaction() && health::lost_count() == self.lost;
        if self.spare.keeps && clean && !self.spare.health.suspected() {
            self.spare.keep(connection);
        }
        // Otherwise dropped: back to the pool, with its release's round trip.
    }
}

type Transactions = <Any as Database>::TransactionManager;

/// A transaction on a lent connection. Dropped unfinished, it queues its `ROLLBACK`
/// and its connection goes back to the pool, which sends it.
#[derive(Debug)]
pub(crate) struct LentTx {
    connection: Lent,
    open: bool,
}

impl LentTx {
    pub(crate) async fn begin(mut connection: Lent) -> Result<Self, sqlx::Error> {
        // Until it is known to have begun, the connection is not clean.
        connection.unfinished = true;
        Transactions::begin(&mut connection, None).await?;
        connection.unfinished = false;
        Ok(Self { connection, open: true })
    }

    pub(crate) async fn commit(mut self) -> Result<(), sqlx::Error> {
        self.finish(true).await
    }

    pub(crate) async fn rollback(mut self) -> Result<(), sqlx::Error> {
        self.finish(false).await
    }

    async fn finish(&mut self, commit: bool) -> Result<(), sqlx::Error> {
        self.connection.unfinished = true;
        if commit {
            Transactions::commit(&mut self.connection).await?;
        } else {
            Transactions::rollback(&mut self.connection).await?;
        }
        self.open = false;
        self.connection.unfinished = false;
        Ok(())
    }
}

impl Deref for LentTx {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        &self.connection
    }
}

impl DerefMut for LentTx {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        &mut self.connection
    }
}

impl Drop for LentTx {
    fn drop(&mut self) {
        if self.open {
            Transactions::start_rollback(&mut self.connection);
            self.connection.unfinished = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use sqlx::Row as _;

    use crate::{SqlStore, Store as _, StoreTx as _};

    /// The machine's PostgreSQL; these tests only read, so its `postgres` database does.
    async fn store() -> SqlStore {
        let server =
            std::env::var("AGENTPROCESS_TEST_PG").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".to_owned());
        SqlStore::connect(&format!("{server}/postgres"), 4)
            .await
            .expect("connect")
    }

    async fn backend(connection: &mut sqlx::AnyConnection) -> i64 {
        let row = sqlx::query("SELECT pg_backend_pid()::BIGINT AS pid")
            .fetch_one(connection)
            .await
            .expect("pid");
        row.try_get("pid").expect("pid")
    }

    #[tokio::test]
    async fn a_clean_connection_is_kept_and_lent_again_as_it_is() {
        let store = store().await;
        let first = backend(&mut store.lend().await.expect("lend")).await;
        assert_eq!(store.spare.len(), 1, "kept, not given back to the pool");
        assert_eq!(store.pool.num_idle(), 0);
        let second = backend(&mut store.lend().await.expect("lend")).await;
        assert_eq!(first, second, "the same connection, lent again");
        assert_eq!(store.pool_stats(), (1, 1), "one connection open, idle in the spare");
        // A committed transaction leaves it clean too.
        let mut tx = store.begin().await.expect("begin");
        assert_eq!(backend(tx.connection()).await, first);
        tx.commit().await.expect("commit");
        assert_eq!(store.spare.len(), 1);
        store.close().await;
    }

    #[tokio::test]
    async fn a_transaction_dropped_unfinished_goes_back_to_the_pool_and_ends() {
        let store = store().await;
        let mut tx = store.begin().await.expect("begin");
        let pid = backend(tx.connection()).await;
        drop(tx);
        assert_eq!(store.spare.len(), 0, "given back to the pool, which sends its ROLLBACK");
        // The pool's release is a task of its own; it ends the transaction promptly.
        let mut connection = store.lend().await.expect("lend");
        for _ in 0..50 {
            let row = sqlx::query("SELECT COALESCE(MAX(state), '') AS state FROM pg_stat_activity WHERE pid = $1 AND xact_start IS NOT NULL")
                .bind(pid)
                .fetch_one(&mut *connection)
                .await
                .expect("activity");
            if row.try_get::<String, _>("state").expect("state").is_empty() {
                drop(connection);
                store.close().await;
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("the dropped transaction was still open after a second");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_given_back_goes_to_the_borrower_waiting_longest() {
        let server =
            std::env::var("AGENTPROCESS_TEST_PG").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".to_owned());
        let store = SqlStore::connect(&format!("{server}/postgres"), 1)
            .await
            .expect("connect");
        let held = store.lend().await.expect("lend");
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let borrow = |name: &'static str| {
            let (store, order) = (store.clone(), std::sync::Arc::clone(&order));
            tokio::spawn(async move {
                let connection = store.lend().await.expect("lend");
                order.lock().expect("order").push(name);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                drop(connection);
            })
        };
        let first = borrow("first");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let second = borrow("second");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        // Given back, then asked for at once: the newcomer waits behind the two.
        drop(held);
        let late = borrow("late");
        for borrower in [first, second, late] {
            borrower.await.expect("borrower");
        }
        assert_eq!(*order.lock().expect("order"), ["first", "second", "late"]);
        assert_eq!(store.pool_stats().0, 1, "never more than the pool's one connection");
        store.close().await;
    }

    /// A borrower waits while the pool opens a connection for it, and the connection
    /// held is given back. Whether the one given back came first (else the opened one
    /// did, and the try shows nothing).
    async fn serve_while_one_opens(store: &SqlStore) -> bool {
        let held_pid = backend(&mut store.lend().await.expect("lend")).await;
        // Lent again, so that the next borrower finds nothing kept.
        let held = store.lend().await.expect("lend");
        let borrower = {
            let store = store.clone();
            tokio::spawn(async move { backend(&mut store.lend().await.expect("lend")).await })
        };
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while store.spare.waiting() == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the borrower waits");
        drop(held);
        borrower.await.expect("borrower") == held_pid
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_opened_for_a_borrower_handed_another_first_is_kept() {
        for _ in 0..10 {
            let store = store().await;
            let handed_first = serve_while_one_opens(&store).await;
            let mut stats = store.pool_stats();
            for _ in 0..100 {
                if stats == (2, 2) {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                stats = store.pool_stats();
            }
            store.close().await;
            if handed_first {
                assert_eq!(
                    stats,
                    (2, 2),
                    "the connection opened for the borrower is kept, not abandoned"
                );
                return;
            }
        }
        panic!("in ten tries the connection given back never came before the one opened");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_close_ends_while_a_connection_opens_for_a_borrower_served_meanwhile() {
        for _ in 0..5 {
            let store = store().await;
            let handed_first = serve_while_one_opens(&store).await;
            // Closed at once: the connection opened for the borrower (when the one
            // given back came first) arrives during the close.
            tokio::time::timeout(std::time::Duration::from_secs(5), store.close())
                .await
                .unwrap_or_else(|_| panic!("the close waited for a connection kept after it began ({handed_first})"));
        }
    }

    #[tokio::test]
    async fn while_connections_are_suspected_none_is_kept() {
        let store = store().await;
        drop(store.lend().await.expect("lend"));
        assert_eq!(store.spare.len(), 1);
        store.suspect_connections();
        drop(store.lend().await.expect("lend"));
        assert_eq!(store.spare.len(), 0, "each checked by the pool as it comes back");
        store.close().await;
    }
}
