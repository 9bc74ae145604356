//! Sends shared fairly between organizations, for the webhook and message loops.
//!
//! A pass asks the store which organizations have work due (each named once, the one
//! waiting longest first), then takes of each only what its share leaves room for: at
//! most `per_organization` sends under way for one organization, out of `concurrency`
//! for the loop. So an organization whose endpoint never answers ties up its own share
//! and nothing more, and another organization's message goes out in the next pass.
//!
//! Each send runs as a task of its own with its own deadline: a pass never waits for
//! one, and the loop goes on taking new work while earlier sends are under way. What
//! a pass took is held in the database until its send records how it went (or the
//! hold ends), so neither this loop nor another replica's takes it again meanwhile;
//! each send's deadline ends before its hold does. A send that finds what it carries
//! already under way here (the clock moved past a hold) is not started twice.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::task::{Id, JoinError, JoinSet};
use tokio_util::sync::CancellationToken;

/// One send, ready to start: the keys of what it carries, and the work (the send under
/// its deadline, then recording how it went).
pub(crate) struct Send {
    /// The rows it carries, named uniquely within the loop.
    pub(crate) keys: Vec<String>,
    /// The send.
    pub(crate) work: Pin<Box<dyn Future<Output = ()> + std::marker::Send + 'static>>,
}

/// How a pass went, for the pause after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Pass {
    /// Rows taken.
    pub(crate) taken: usize,
    /// An organization gave all it was asked for: more of its work may be due.
    pub(crate) more: bool,
    /// An organization with work due had no room left: a send finishing makes some.
    pub(crate) waiting: bool,
}

impl Pass {
    /// The pause before the next pass: none while more may be due and there is room
    /// to take it, else the loop's poll (cut short by a wake, or by a send finishing
    /// while work waits for room).
    pub(crate) fn pause(&self, sends: &Sends, poll: Duration) -> Duration {
        if self.more && !sends.is_full() {
            Duration::ZERO
        } else {
            poll
        }
    }
}

/// The sends under way in one loop.
pub(crate) struct Sends {
    tasks: JoinSet<()>,
    /// Each task's organization and keys.
    started: HashMap<Id, (String, Vec<String>)>,
    by_organization: HashMap<String, usize>,
    keys: HashSet<String>,
    concurrency: usize,
    per_organization: usize,
    /// The last pass left an organization's work waiting for room.
    waiting: bool,
}

impl Sends {
    /// At most `concurrency` sends under way, `per_organization` of them for one
    /// organization (each at least one).
    pub(crate) fn new(concurrency: usize, per_organization: usize) -> Self {
        let concurrency = concurrency.max(1);
        Self {
            tasks: JoinSet::new(),
            started: HashMap::new(),
            by_organization: HashMap::new(),
            keys: HashSet::new(),
            concurrency,
            per_organization: per_organization.clamp(1, concurrency),
            waiting: false,
        }
    }

    /// How many more sends `org` may start now.
    pub(crate) fn room(&self, org: &str) -> usize {
        let free = self.concurrency.saturating_sub(self.tasks.len());
        let own = self.by_organization.get(org).copied().unwrap_or(0);
        free.min(self.per_organization.saturating_sub(own))
    }

    /// Whether no send may start now.
    pub(crate) fn is_full(&self) -> bool {
        self.tasks.len() >= self.concurrency
    }

    /// How many organizations at most can have no room left while others have some:
    /// each of them holds at least one send. A pass looks at this many more
    /// organizations than it means to serve, so busy ones never crowd the rest out of
    /// its list.
    pub(crate) fn busiest(&self) -> usize {
        self.concurrency
    }

    /// Starts `send` for `org`; `false` (and nothing started) when any of its keys is
    /// under way already.
    pub(crate) fn start(&mut self, org: &str, send: Send) -> bool {
        if send.keys.iter().any(|key| self.keys.contains(key)) {
            return false;
        }
        self.keys.extend(send.keys.iter().cloned());
        *self.by_organization.entry(org.to_owned()).or_default() += 1;
        let id = self.tasks.spawn(send.work).id();
        self.started.insert(id, (org.to_owned(), send.keys));
        true
    }

    /// Forgets the sends that have finished.
    pub(crate) fn reap(&mut self) {
        while let Some(joined) = self.tasks.try_join_next_with_id() {
            self.finished(joined);
        }
    }

    fn finished(&mut self, joined: Result<(Id, ()), JoinError>) {
        let id = match joined {
            Ok((id, ())) => id,
            Err(error) => {
                if error.is_panic() {
                    tracing::error!(%error, "a send panicked");
                }
                error.id()
            }
        };
        let Some((org, keys)) = self.started.remove(&id) else {
            return;
        };
        for key in &keys {
            self.keys.remove(key);
        }
        if let Some(count) = self.by_organization.get_mut(&org) {
            *count -= 1;
            if *count == 0 {
                self.by_organization.remove(&org);
            }
        }
    }

    /// One pass over `organizations` (those with work due, the longest waiting
    /// first): each is asked, through `take`, for as many sends as it has room for,
    /// and they are started. `take` answers the rows it took and the sends they make.
    ///
    /// Those with fewer sends under way come first (the longest waiting first among
    /// equals): when the loop is full, the room a finished send leaves goes to an
    /// organization that has none under way before one that already has.
    pub(crate) async fn pass<Take, Taking>(
        &mut self,
        mut organizations: Vec<String>,
        mut take: Take,
    ) -> Result<Pass, String>
    where
        Take: FnMut(String, u32) -> Taking,
        Taking: Future<Output = Result<(usize, Vec<Send>), String>>,
    {
        self.reap();
        organizations.sort_by_key(|org| self.by_organization.get(org).copied().unwrap_or(0));
        let mut pass = Pass::default();
        for org in organizations {
            let room = self.room(&org);
            if room == 0 {
                pass.waiting = true;
                continue;
            }
            let asked = u32::try_from(room).unwrap_or(u32::MAX);
            let (rows, sends) = take(org.clone(), asked).await?;
            pass.taken += rows;
            pass.more |= rows >= room;
            for send in sends {
                if !self.start(&org, send) {
                    tracing::debug!(org = %org, "a send already under way was taken again; left to the first");
                }
            }
        }
        self.waiting = pass.waiting || pass.more;
        Ok(pass)
    }

    /// Waits `pause`, or less: until `wake` is notified, or (while work waits for
    /// room) a send finishes; `false` once `stop` is cancelled.
    pub(crate) async fn rest(&mut self, stop: &CancellationToken, wake: &tokio::sync::Notify, pause: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + pause;
        loop {
            let waiting = self.waiting;
            tokio::select! {
                biased;
                () = stop.cancelled() => return false,
                () = wake.notified() => return true,
                Some(joined) = self.tasks.join_next_with_id(), if !self.tasks.is_empty() => {
                    self.finished(joined);
                    // Room for work that waits for it: a pass now. Otherwise only
                    // the count is kept, and the rest goes on.
                    if waiting {
                        return true;
                    }
                }
                () = tokio::time::sleep_until(deadline) => return true,
            }
        }
    }

    /// Waits for every send under way (each ends by its own deadline).
    pub(crate) async fn finish(&mut self) {
        while let Some(joined) = self.tasks.join_next_with_id().await {
            self.finished(joined);
        }
    }
}

/// How long a take holds what it took, sends lasting at most `send`: the send, then
/// the time to record how it went.
pub(crate) fn hold_for(send: Duration) -> Duration {
    send.saturating_mul(3) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A send that lasts until `until` is cancelled.
    fn waiting_send(keys: &[&str], until: CancellationToken) -> Send {
        Send {
            keys: keys.iter().map(|key| (*key).to_owned()).collect(),
            work: Box::pin(async move { until.cancelled().await }),
        }
    }

    #[tokio::test]
    async fn an_organization_gets_its_share_and_the_rest_stays_for_others() {
        let release = CancellationToken::new();
        let mut sends = Sends::new(4, 2);
        assert_eq!(sends.room("a"), 2);
        assert!(sends.start("a", waiting_send(&["a1"], release.clone())));
        assert!(sends.start("a", waiting_send(&["a2"], release.clone())));
        assert_eq!(sends.room("a"), 0, "a's share is under way");
        assert_eq!(sends.room("b"), 2, "b keeps its room");
        assert!(
            !sends.start("b", waiting_send(&["a1"], release.clone())),
            "a key under way is not sent twice"
        );
        assert!(sends.start("b", waiting_send(&["b1"], release.clone())));
        assert!(sends.start("c", waiting_send(&["c1"], release.clone())));
        assert!(sends.is_full());
        assert_eq!(sends.room("d"), 0);
        release.cancel();
        sends.finish().await;
        assert_eq!((sends.room("a"), sends.room("d")), (2, 2));
        assert!(sends.keys.is_empty() && sends.by_organization.is_empty());
    }

    #[tokio::test]
    async fn a_pass_takes_each_organizations_room_and_never_waits_for_a_send() {
        let never = CancellationToken::new();
        let mut sends = Sends::new(8, 2);
        let mut asked = Vec::new();
        let taking = |org: String, limit: u32| {
            asked.push((org.clone(), limit));
            let sends: Vec<Send> = (0..limit)
                .map(|index| waiting_send(&[&format!("{org}{index}")], never.clone()))
                .collect();
            async move { Ok((sends.len(), sends)) }
        };
        let pass = sends
            .pass(vec!["a".to_owned(), "b".to_owned()], taking)
            .await
            .expect("pass");
        assert_eq!(asked, [("a".to_owned(), 2), ("b".to_owned(), 2)]);
        assert_eq!(
            pass,
            Pass {
                taken: 4,
                more: true,
                waiting: false
            }
        );
        // The sends never end; the next pass finds both organizations without room,
        // and a third served at once.
        let pass = sends
            .pass(
                vec!["a".to_owned(), "b".to_owned(), "c".to_owned()],
                |org: String, limit: u32| {
                    let sends: Vec<Send> = (0..limit)
                        .map(|index| waiting_send(&[&format!("{org}{index}")], never.clone()))
                        .collect();
                    async move { Ok((sends.len(), sends)) }
                },
            )
            .await
            .expect("pass");
        assert_eq!(
            pass,
            Pass {
                taken: 2,
                more: true,
                waiting: true
            }
        );
        // Full: the room one finished send leaves goes to an organization with none
        // under way, though listed last.
        let mut full = Sends::new(2, 2);
        assert!(full.start("a", waiting_send(&["a0"], never.clone())));
        full.start(
            "a",
            Send {
                keys: vec!["a1".to_owned()],
                work: Box::pin(async {}),
            },
        );
        while full.tasks.len() > 1 {
            tokio::task::yield_now().await;
            full.reap();
        }
        let mut asked = Vec::new();
        full.pass(vec!["a".to_owned(), "z".to_owned()], |org: String, limit: u32| {
            asked.push((org, limit));
            async { Ok((0, Vec::new())) }
        })
        .await
        .expect("pass");
        assert_eq!(asked, [("z".to_owned(), 1), ("a".to_owned(), 1)]);
        full.tasks.abort_all();
        full.finish().await;
        sends.tasks.abort_all();
        sends.finish().await;
        assert!(sends.started.is_empty());
    }
}
