//! Connections that stop answering (PostgreSQL only). The store reaches the test's
//! database through a relay that passes bytes until told otherwise: to go silent (what
//! is sent is acknowledged by the kernel and never answered, as with a frozen server or
//! a proxy that lost its upstream), or to reset every connection.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentprocess_store::{SqlStore, Store as _};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::support::TestDb;

/// What a relayed connection does with what it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Pass,
    Silent,
    Reset,
}

/// A TCP relay in front of `upstream`; `set(mode)` applies to the connections open now.
struct Relay {
    port: u16,
    links: Arc<Mutex<Vec<watch::Sender<Mode>>>>,
}

impl Relay {
    async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("listen");
        let port = listener.local_addr().expect("address").port();
        let links: Arc<Mutex<Vec<watch::Sender<Mode>>>> = Arc::default();
        let registered = Arc::clone(&links);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let (mode, watched) = watch::channel(Mode::Pass);
                registered.lock().expect("links").push(mode);
                tokio::spawn(relay(client, server, watched));
            }
        });
        Self { port, links }
    }

    fn set(&self, mode: Mode) {
        for link in self.links.lock().expect("links").iter() {
            let _ = link.send(mode);
        }
    }
}

async fn relay(client: TcpStream, server: TcpStream, mode: watch::Receiver<Mode>) {
    let (from_client, to_client) = client.into_split();
    let (from_server, to_server) = server.into_split();
    let up = tokio::spawn(pass(from_client, to_server, mode.clone()));
    let down = tokio::spawn(pass(from_server, to_client, mode));
    let _ = tokio::join!(up, down);
}

/// Passes what `from` reads on to `to` while the mode is `Pass`, swallows it while
/// `Silent`, and resets both connections on `Reset`. When `from` ends, `to` is told,
/// silent or not, as a proxy's kernel does.
async fn pass(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut mode: watch::Receiver<Mode>) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        tokio::select! {
            read = from.read(&mut buffer) => {
                let n = match read {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let passing = *mode.borrow() == Mode::Pass;
                if passing && to.write_all(&buffer[..n]).await.is_err() {
                    return;
                }
            }
            changed = mode.changed() => {
                if changed.is_err() || *mode.borrow() == Mode::Reset {
                    for stream in [from.as_ref(), to.as_ref()] {
                        let _ = socket2::SockRef::from(stream).set_linger(Some(Duration::ZERO));
                    }
                    return;
                }
            }
        }
    }
}

/// A store over the relay to `db`'s database, with `connections` of them open and idle.
async fn store_through(db: &TestDb, relay: &Relay, connections: usize) -> SqlStore {
    let name = db.url.rsplit_once('/').expect("a database").1;
    let url = format!("postgres://postgres@127.0.0.1:{}/{name}", relay.port);
    let store = SqlStore::connect(&url, u32::try_from(connections).expect("few"))
        .await
        .expect("connect");
    // Transactions held at once each take a connection of their own.
    let mut held = Vec::new();
    for _ in 0..connections {
        held.push(store.begin().await.expect("begin"));
    }
    drop(held);
    wait_for(
        || store.pool_stats() == (connections as u64, connections as u64),
        Duration::from_secs(5),
    )
    .await;
    store
}

async fn wait_for(mut done: impl FnMut() -> bool, patience: Duration) -> bool {
    let until = Instant::now() + patience;
    while !done() {
        if Instant::now() > until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

fn upstream_of(db: &TestDb) -> SocketAddr {
    let host = db
        .url
        .rsplit_once('@')
        .expect("a user")
        .1
        .split('/')
        .next()
        .expect("a host");
    std::net::ToSocketAddrs::to_socket_addrs(host)
        .expect("an address")
        .next()
        .expect("one")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_an_abandoned_connection_proves_silent_every_idle_one_is_checked_at_once() {
    let db = TestDb::new(agentprocess_store::Dialect::Postgres).await;
    let relay = Relay::start(upstream_of(&db)).await;
    let store = store_through(&db, &relay, 4).await;

    relay.set(Mode::Silent);
    // A call stuck on a silent connection, abandoned at its deadline: the service tells
    // the store before the work is dropped.
    let mut stuck = Box::pin(store.ping());
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut stuck)
            .await
            .is_err(),
        "silent"
    );
    store.suspect_connections();
    drop(stuck);
    let abandoned = Instant::now();

    // The abandoned connection's check (2 s) finds it dead; the sweep then checks the
    // three idle ones together (2 s), not one call at a time.
    assert!(
        wait_for(|| store.pool_stats().0 == 0, Duration::from_secs(6)).await,
        "every silent connection closed; open and idle: {:?}",
        store.pool_stats()
    );
    assert!(abandoned.elapsed() < Duration::from_secs(6));
    assert_eq!(
        store.connections_found_dead(),
        4,
        "the abandoned one, then three by the sweep"
    );
    tokio::time::timeout(Duration::from_secs(2), store.ping())
        .await
        .expect("answered at once on a new connection")
        .expect("the database answers");
    db.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_on_a_lost_connection_has_the_idle_ones_checked_before_use() {
    let db = TestDb::new(agentprocess_store::Dialect::Postgres).await;
    let relay = Relay::start(upstream_of(&db)).await;
    let store = store_through(&db, &relay, 4).await;

    relay.set(Mode::Reset);
    let error = store.ping().await.expect_err("the connection was reset");
    assert!(error.to_string().contains("database"), "{error}");
    // Every other idle connection was reset too; none is handed out unchecked.
    tokio::time::timeout(Duration::from_secs(3), store.ping())
        .await
        .expect("answered within a check")
        .expect("the next call goes through on a new connection");
    assert!(store.connections_found_dead() >= 1);
    db.drop_database().await;
}
