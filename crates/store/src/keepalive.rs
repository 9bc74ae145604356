//! TCP keepalive and `TCP_USER_TIMEOUT` on the pool's sockets to PostgreSQL.
//!
//! Without them the kernel gives up on a busy connection whose peer vanished without a
//! word (a NAT or firewall that dropped its entry, a host gone: a half-open connection)
//! only after about fifteen minutes of retransmissions, and on an idle one never, so a
//! statement sent on it waits for the call's deadline. With them it gives up once the
//! peer has acknowledged nothing for [`USER_TIMEOUT`], busy (data unacknowledged) or
//! idle (keepalive probes unanswered, the first after [`KEEPALIVE_IDLE`]), and any
//! statement on the connection fails at once. A slow query is not affected: the peer's
//! kernel acknowledges the statement and answers the probes while the server works.
//!
//! The server's end gets the same (`tcp_keepalives_*` and `tcp_user_timeout`, set for
//! the session): a backend whose client vanished would otherwise hold its open
//! transaction, and the run locks it took, until the server's default keepalive gives
//! up on the client after about two hours, however quickly this side replaced the
//! connection.
//!
//! sqlx 0.8 opens its sockets itself and has no option for either (launchbadge/sqlx
//! issue 3540), so after each new connection the process's open sockets connected to
//! the database's address are found in `/proc/self/fd` and given the options. Setting
//! them again changes nothing, so connections made at the same moment are covered by
//! whichever look comes first. Linux only: elsewhere the sockets keep the system's
//! defaults, and the pool's bounded checks and the call deadline remain.

use std::net::SocketAddr;
use std::time::Duration;

/// Idle time before the first keepalive probe.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(5);
/// Time between keepalive probes.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(2);
/// How long the peer may leave sent data or probes unacknowledged before the kernel
/// closes the connection.
pub const USER_TIMEOUT: Duration = Duration::from_secs(10);

/// Unanswered probes after which the server's end gives up, where the user timeout
/// does not apply first.
const KEEPALIVE_COUNT: u32 = 3;

/// The session settings that give the server's end of a connection the same liveness,
/// as one simple query.
pub(crate) fn server_settings() -> String {
    format!(
        "SET tcp_keepalives_idle = {}; SET tcp_keepalives_interval = {}; SET tcp_keepalives_count = {}; \
         SET tcp_user_timeout = {}",
        KEEPALIVE_IDLE.as_secs(),
        KEEPALIVE_INTERVAL.as_secs(),
        KEEPALIVE_COUNT,
        USER_TIMEOUT.as_millis()
    )
}

/// Gives this process's sockets to a new connection's `address` (host, port) their
/// liveness; a failure is logged, and the connection used anyway with the defaults.
/// The caller sets [`server_settings`] on the connection for the server's end.
pub(crate) async fn apply_here(address: Option<(String, u16)>) {
    if let Some((host, port)) = address
        && let Err(error) = apply(&host, port).await
    {
        tracing::warn!(%error, "the database connection's keepalive was not set here");
    }
}

/// Gives the options to every socket of this process connected to `host:port` that
/// lacks them; returns how many were given them.
pub(crate) async fn apply(host: &str, port: u16) -> std::io::Result<usize> {
    let peers: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await?.collect();
    sockets::apply(&peers)
}

#[cfg(target_os = "linux")]
mod sockets {
    use std::net::SocketAddr;
    use std::os::fd::{BorrowedFd, RawFd};
    use std::os::unix::ffi::OsStrExt as _;

    use socket2::{SockRef, TcpKeepalive, Type};

    use super::{KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, USER_TIMEOUT};

    pub(super) fn apply(peers: &[SocketAddr]) -> std::io::Result<usize> {
        let mut given = 0;
        for entry in std::fs::read_dir("/proc/self/fd")?.flatten() {
            let Some(fd) = entry.file_name().to_str().and_then(|name| name.parse::<RawFd>().ok()) else {
                continue;
            };
            // Only sockets: their link reads `socket:[inode]`.
            let is_socket = std::fs::read_link(entry.path())
                .is_ok_and(|target| target.as_os_str().as_bytes().starts_with(b"socket:"));
            if is_socket && give(fd, peers).unwrap_or(false) {
                given += 1;
            }
        }
        Ok(given)
    }

    /// Sets the options on `fd` if it is a TCP socket connected to one of `peers`
    /// without them; whether it did.
    #[allow(unsafe_code)]
    fn give(fd: RawFd, peers: &[SocketAddr]) -> std::io::Result<bool> {
        // SAFETY: `fd` was listed as open a moment ago, and the borrow lives only for
        // the socket calls below on this thread, none of which closes it. Another
        // thread may close it meanwhile and the number be reused: then the calls fail,
        // or reach the new descriptor, which they change only if it is also a TCP
        // socket connected to the database, i.e. another of this process's database
        // connections, which is to get the same options.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let socket = SockRef::from(&borrowed);
        let connected = socket.r#type()? == Type::STREAM
            && socket
                .peer_addr()?
                .as_socket()
                .is_some_and(|peer| peers.contains(&peer));
        if !connected || socket.tcp_user_timeout()? == Some(USER_TIMEOUT) {
            return Ok(false);
        }
        socket.set_tcp_keepalive(
            &TcpKeepalive::new()
                .with_time(KEEPALIVE_IDLE)
                .with_interval(KEEPALIVE_INTERVAL),
        )?;
        socket.set_tcp_user_timeout(Some(USER_TIMEOUT))?;
        Ok(true)
    }
}

#[cfg(not(target_os = "linux"))]
mod sockets {
    pub(super) fn apply(_peers: &[std::net::SocketAddr]) -> std::io::Result<usize> {
        Ok(0)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sockets_to_the_address_get_the_options_and_others_do_not() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listen");
        let other = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listen");
        let port = listener.local_addr().expect("address").port();
        let to_database = tokio::net::TcpStream::connect(listener.local_addr().expect("address"))
            .await
            .expect("connect");
        let elsewhere = tokio::net::TcpStream::connect(other.local_addr().expect("address"))
            .await
            .expect("connect");

        assert_eq!(apply("127.0.0.1", port).await.expect("applied"), 1);
        let socket = socket2::SockRef::from(&to_database);
        assert_eq!(socket.tcp_user_timeout().expect("read"), Some(USER_TIMEOUT));
        assert!(socket.keepalive().expect("read"));
        assert_eq!(socket.tcp_keepalive_time().expect("read"), KEEPALIVE_IDLE);
        assert_eq!(socket.tcp_keepalive_interval().expect("read"), KEEPALIVE_INTERVAL);
        let untouched = socket2::SockRef::from(&elsewhere);
        assert_eq!(untouched.tcp_user_timeout().expect("read"), None);
        assert!(!untouched.keepalive().expect("read"));

        assert_eq!(apply("127.0.0.1", port).await.expect("applied"), 0, "set once");
    }

    #[test]
    fn the_server_end_gets_the_same_liveness() {
        let settings = server_settings();
        assert!(settings.contains(&format!("tcp_keepalives_idle = {}", KEEPALIVE_IDLE.as_secs())));
        assert!(settings.contains(&format!("tcp_keepalives_interval = {}", KEEPALIVE_INTERVAL.as_secs())));
        assert!(settings.contains(&format!("tcp_user_timeout = {}", USER_TIMEOUT.as_millis())));
    }
}
