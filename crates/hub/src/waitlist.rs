//! What waits for a person: each entry listed for the dashboard and the desktop app until it is
//! answered, its asker gives it up (it leaves the list), or its time runs out. Calls waiting for
//! a yes (`approvals.rs`) and servers' questions (`questions/`) are each one of these.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{oneshot, watch};

/// Why a wait ended without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unanswered {
    TimedOut,
    /// The list was dropped: Switchboard is stopping.
    Stopped,
}

/// Why an answer was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum NotTaken<E> {
    /// Nothing waits under that id (any more): answered already, given up, or timed out.
    NotWaiting,
    /// The answer does not fit what was asked.
    Rejected(E),
}

struct Entry<T, A> {
    item: T,
    answer: oneshot::Sender<A>,
}

/// Entries of type `T`, each waiting for an answer of type `A`.
pub(crate) struct Waitlist<T, A> {
    waiting: Mutex<BTreeMap<u64, Entry<T, A>>>,
    next_id: AtomicU64,
    /// Bumped whenever the entries change.
    changed: watch::Sender<u64>,
}

impl<T, A> Default for Waitlist<T, A> {
    fn default() -> Self {
        Waitlist {
            waiting: Mutex::default(),
            next_id: AtomicU64::new(0),
            changed: watch::Sender::default(),
        }
    }
}

impl<T: Clone, A> Waitlist<T, A> {
    /// Lists the entry `item(id)` makes and waits at most `timeout` for its answer. Dropping the
    /// future takes the entry off the list.
    pub(crate) async fn wait(
        &self,
        item: impl FnOnce(u64) -> T,
        timeout: Duration,
    ) -> Result<A, Unanswered> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let (answer, answered) = oneshot::channel();
        let entry = Entry {
            item: item(id),
            answer,
        };
        self.lock().insert(id, entry);
        self.changed.send_modify(|count| *count += 1);
        let _off_the_list = OffTheList { list: self, id };
        match tokio::time::timeout(timeout, answered).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(Unanswered::Stopped),
            Err(_) => Err(Unanswered::TimedOut),
        }
    }

    /// The entries waiting, oldest first.
    pub(crate) fn waiting(&self) -> Vec<T> {
        self.lock()
            .values()
            .map(|entry| entry.item.clone())
            .collect()
    }

    /// Answers entry `id` with what `decide` makes of it, unless `decide` rejects it (the entry
    /// then waits on).
    pub(crate) fn answer<E>(
        &self,
        id: u64,
        decide: impl FnOnce(&T) -> Result<A, E>,
    ) -> Result<(), NotTaken<E>> {
        let entry = {
            let mut waiting = self.lock();
            let entry = waiting.get(&id).ok_or(NotTaken::NotWaiting)?;
            let answer = decide(&entry.item).map_err(NotTaken::Rejected)?;
            let entry = waiting.remove(&id).expect("present under the lock");
            (entry.answer, answer)
        };
        self.changed.send_modify(|count| *count += 1);
        let (sender, answer) = entry;
        sender.send(answer).map_err(|_| NotTaken::NotWaiting)
    }

    /// Told whenever the entries change.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Entry<T, A>>> {
        self.waiting
            .lock()
            .expect("waitlist lock is never poisoned")
    }
}

/// Takes an entry off the list when its wait ends, however it ends.
struct OffTheList<'a, T: Clone, A> {
    list: &'a Waitlist<T, A>,
    id: u64,
}

impl<T: Clone, A> Drop for OffTheList<'_, T, A> {
    fn drop(&mut self) {
        if self.list.lock().remove(&self.id).is_some() {
            self.list.changed.send_modify(|count| *count += 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_entry_is_listed_until_answered_and_an_answer_counts_once() {
        let list: Waitlist<String, u32> = Waitlist::default();
        let mut changes = list.subscribe();
        let wait = list.wait(|id| format!("entry {id}"), Duration::from_secs(60));
        let answer = async {
            changes.changed().await.expect("told");
            assert_eq!(list.waiting(), ["entry 1"]);
            assert_eq!(
                list.answer(1, |_| Err::<u32, _>("no")),
                Err(NotTaken::Rejected("no"))
            );
            assert_eq!(
                list.waiting().len(),
                1,
                "a rejected answer leaves it waiting"
            );
            assert_eq!(list.answer(1, |_| Ok::<_, ()>(7)), Ok(()));
            assert_eq!(
                list.answer(1, |_| Ok::<_, ()>(8)),
                Err(NotTaken::NotWaiting),
                "answered twice"
            );
        };
        let (outcome, ()) = tokio::join!(wait, answer);
        assert_eq!(outcome, Ok(7));
        assert!(list.waiting().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn an_entry_times_out_and_one_given_up_leaves_the_list() {
        let list: Waitlist<u64, ()> = Waitlist::default();
        let outcome = list.wait(|id| id, Duration::from_secs(5)).await;
        assert_eq!(outcome, Err(Unanswered::TimedOut));
        assert!(list.waiting().is_empty());

        let given_up = tokio::time::timeout(
            Duration::from_secs(1),
            list.wait(|id| id, Duration::from_secs(3600)),
        )
        .await;
        assert!(given_up.is_err());
        assert!(list.waiting().is_empty(), "its asker gave it up");
        assert_eq!(
            list.answer(2, |_| Ok::<_, ()>(())),
            Err(NotTaken::NotWaiting)
        );
    }
}
