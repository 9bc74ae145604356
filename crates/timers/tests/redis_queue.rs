//! The Redis queue against a real Redis: the machine's own (each test under its own
//! key prefix, its keys deleted at the end; never flushed), named by
//! `AGENTPROCESS_TEST_REDIS` (default redis://127.0.0.1:6379).

use std::collections::BTreeSet;

use agentprocess_timers::{Entry, RedisQueue, RedisSettings, TimerQueue};

fn redis_url() -> String {
    std::env::var("AGENTPROCESS_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A queue under a fresh prefix, with `partitions` sorted sets.
struct TestQueue {
    queue: RedisQueue,
    settings: RedisSettings,
}

impl TestQueue {
    fn new(partitions: u16) -> Self {
        let mut bytes = [0_u8; 6];
        getrandom::fill(&mut bytes).expect("random");
        let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let settings = RedisSettings {
            prefix: format!("agentprocess-test:{suffix}"),
            partitions,
            ..RedisSettings::new(redis_url())
        };
        let queue = RedisQueue::new(&settings).expect("queue");
        Self { queue, settings }
    }

    /// Deletes this test's keys (and only those).
    async fn delete(self) {
        let client = deadpool_redis::redis::Client::open(self.settings.url.clone()).expect("client");
        let mut connection = client.get_multiplexed_async_connection().await.expect("connect");
        for partition in 0..self.settings.partitions {
            let _: () = deadpool_redis::redis::cmd("DEL")
                .arg(format!("{}:{partition}", self.settings.prefix))
                .query_async(&mut connection)
                .await
                .expect("del");
        }
    }
}

fn entry(org: &str, timer: &str, fire_at: i64) -> Entry {
    Entry {
        org: org.to_owned(),
        run_id: "r_1".to_owned(),
        timer_id: timer.to_owned(),
        fire_at,
    }
}

fn names(entries: &[Entry]) -> BTreeSet<String> {
    entries
        .iter()
        .map(|entry| format!("{}/{}", entry.org, entry.timer_id))
        .collect()
}

#[test]
fn members_name_timers_whatever_their_characters() {
    let odd = Entry {
        org: "o:\"1\"".to_owned(),
        run_id: "r ,2]".to_owned(),
        timer_id: "s:due:1".to_owned(),
        fire_at: 5,
    };
    assert_eq!(Entry::from_member(&odd.member(), 5).expect("parses"), odd);
    assert!(Entry::from_member("[\"a\",\"b\"]", 5).is_err());
    assert!(Entry::from_member("not json", 5).is_err());
}

#[tokio::test]
async fn due_entries_are_taken_once_and_come_back_after_their_hold() {
    let test = TestQueue::new(1);
    let queue = &test.queue;
    queue
        .add(&[entry("o", "a", 100), entry("o", "b", 200), entry("o", "c", 90_000)])
        .await
        .expect("add");
    assert_eq!(queue.count().await.expect("len"), 3);
    assert_eq!(queue.next_due().await.expect("next"), Some(100));
    let taken = queue.take_due(250, 10, 5_000).await.expect("take");
    assert_eq!(names(&taken), names(&[entry("o", "a", 0), entry("o", "b", 0)]));
    assert_eq!(
        taken.iter().map(|e| e.fire_at).collect::<BTreeSet<_>>(),
        BTreeSet::from([100, 200])
    );
    // Held: not due again before the hold ends, whoever asks.
    assert!(queue.take_due(4_999, 10, 9_000).await.expect("take").is_empty());
    // The reconciler leaves held entries alone.
    assert_eq!(queue.restore(&[entry("o", "a", 100)]).await.expect("restore"), 0);
    assert!(queue.take_due(4_999, 10, 9_000).await.expect("take").is_empty());
    // A holder that died: back when the hold ends.
    let back = queue.take_due(5_000, 10, 9_000).await.expect("take");
    assert_eq!(back.len(), 2);
    queue.remove(&back).await.expect("remove");
    assert_eq!(queue.count().await.expect("len"), 1);
    test.delete().await;
}

#[tokio::test]
async fn restore_adds_only_what_is_missing_and_add_moves() {
    let test = TestQueue::new(1);
    let queue = &test.queue;
    queue.add(&[entry("o", "a", 100)]).await.expect("add");
    assert_eq!(
        queue
            .restore(&[entry("o", "a", 50), entry("o", "b", 60)])
            .await
            .expect("restore"),
        1
    );
    assert_eq!(queue.next_due().await.expect("next"), Some(60));
    // Moving a timer later: not due at its old time.
    queue.add(&[entry("o", "b", 1_000)]).await.expect("move");
    let taken = queue.take_due(500, 10, 600).await.expect("take");
    assert_eq!(names(&taken), names(&[entry("o", "a", 0)]));
    test.delete().await;
}

#[tokio::test]
async fn partitions_spread_organizations_and_are_all_taken_from() {
    let test = TestQueue::new(4);
    let queue = &test.queue;
    let entries: Vec<Entry> = (0..40).map(|i| entry(&format!("org{i}"), "t", i)).collect();
    queue.add(&entries).await.expect("add");
    assert_eq!(queue.count().await.expect("len"), 40);
    let mut taken = Vec::new();
    while taken.len() < 40 {
        let batch = queue.take_due(100, 7, 10_000).await.expect("take");
        assert!(!batch.is_empty() && batch.len() <= 7);
        taken.extend(batch);
    }
    assert_eq!(names(&taken), names(&entries));
    test.delete().await;
}

#[tokio::test]
async fn concurrent_takers_never_share_an_entry() {
    let test = TestQueue::new(2);
    let entries: Vec<Entry> = (0..2_000)
        .map(|i| entry(&format!("org{}", i % 13), &format!("t{i}"), i))
        .collect();
    test.queue.add(&entries).await.expect("add");
    let queue = std::sync::Arc::new(test.queue);
    let mut takers = Vec::new();
    for _ in 0..4 {
        let queue = std::sync::Arc::clone(&queue);
        takers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let batch = queue.take_due(10_000, 50, 1_000_000).await.expect("take");
                if batch.is_empty() {
                    return mine;
                }
                mine.extend(batch);
            }
        }));
    }
    let mut all = Vec::new();
    for taker in takers {
        all.extend(taker.await.expect("taker"));
    }
    assert_eq!(all.len(), 2_000, "each entry taken exactly once");
    assert_eq!(names(&all).len(), 2_000);
    let queue = std::sync::Arc::into_inner(queue).expect("sole owner");
    TestQueue {
        queue,
        settings: test.settings,
    }
    .delete()
    .await;
}

#[tokio::test]
async fn an_unreachable_redis_is_an_error_not_a_hang() {
    let settings = RedisSettings {
        timeout: std::time::Duration::from_millis(500),
        ..RedisSettings::new("redis://127.0.0.1:1")
    };
    let queue = RedisQueue::new(&settings).expect("queue is lazy");
    let started = std::time::Instant::now();
    assert!(queue.add(&[entry("o", "a", 1)]).await.is_err());
    assert!(queue.ping().await.is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}
