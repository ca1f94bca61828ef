//! Timestamps for metadata versions: strictly increasing, seconds since the epoch plus a
//! counter within the second (MongoDB's cluster-time shape).

use bson::Timestamp;
use std::sync::Mutex;

#[derive(Default)]
pub struct LogicalClock {
    last: Mutex<(u32, u32)>,
}

impl LogicalClock {
    pub fn now(&self) -> Timestamp {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as u32)
            .unwrap_or(0);
        let mut last = self.last.lock().expect("poisoned");
        *last = if secs > last.0 {
            (secs, 1)
        } else {
            (last.0, last.1 + 1)
        };
        Timestamp {
            time: last.0,
            increment: last.1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictly_increases() {
        let clock = LogicalClock::default();
        let a = clock.now();
        let b = clock.now();
        assert!((b.time, b.increment) > (a.time, a.increment));
    }
}
