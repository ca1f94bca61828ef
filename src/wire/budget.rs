//! The memory incoming messages may hold at once across a process's connections: each message
//! takes room as its bytes arrive (and, compressed, for what it decompresses to) and gives it
//! back once processed, so that many half-sent or decompressing messages cannot exhaust memory.

use super::WireError;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A process's room for incoming messages, in bytes.
#[derive(Debug)]
pub struct MessageBudget {
    room: Arc<Semaphore>,
    limit: usize,
}

/// Room taken by one message; given back when dropped.
#[derive(Debug)]
pub struct Reservation(OwnedSemaphorePermit);

impl Reservation {
    /// Adds more room to this reservation.
    pub fn merge(&mut self, other: Reservation) {
        self.0.merge(other.0);
    }

    pub fn bytes(&self) -> usize {
        self.0.num_permits()
    }
}

impl MessageBudget {
    pub fn new(limit: usize) -> Arc<MessageBudget> {
        Arc::new(MessageBudget {
            room: Arc::new(Semaphore::new(limit.min(Semaphore::MAX_PERMITS))),
            limit,
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held by messages now.
    pub fn in_use(&self) -> usize {
        self.limit.saturating_sub(self.room.available_permits())
    }

    /// Takes `bytes` of room, waiting up to `wait` for other messages to give some back.
    pub async fn reserve(&self, bytes: usize, wait: Duration) -> Result<Reservation, WireError> {
        let n = u32::try_from(bytes).map_err(|_| WireError::OverBudget)?;
        match tokio::time::timeout(wait, Arc::clone(&self.room).acquire_many_owned(n)).await {
            Ok(Ok(permit)) => Ok(Reservation(permit)),
            _ => Err(WireError::OverBudget),
        }
    }
}

/// What bounds the messages a listener receives: the process's budget, and how long a message
/// may go without progress (no byte arriving, or no room for the next ones) before its
/// connection is closed.
#[derive(Clone, Debug)]
pub struct IngressLimits {
    pub budget: Arc<MessageBudget>,
    pub stall_timeout: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn room_is_taken_and_given_back() {
        let budget = MessageBudget::new(100);
        let mut a = budget.reserve(60, Duration::from_secs(1)).await.unwrap();
        a.merge(budget.reserve(30, Duration::from_secs(1)).await.unwrap());
        assert_eq!(a.bytes(), 90);
        assert_eq!(budget.in_use(), 90);
        assert!(matches!(
            budget.reserve(20, Duration::from_millis(10)).await,
            Err(WireError::OverBudget)
        ));
        drop(a);
        assert_eq!(budget.in_use(), 0);
        assert!(budget.reserve(100, Duration::from_secs(1)).await.is_ok());
    }
}
