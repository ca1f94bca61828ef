//! Memory of the processes serving a workload, from `/proc/<pid>/status`: the resident set now
//! (`VmRSS`) and its high-water mark (`VmHWM`), which writing `5` to `/proc/<pid>/clear_refs`
//! resets so that each workload's peak is its own.

/// The serving processes of a cluster and how to describe them.
#[derive(Clone, Debug)]
pub struct Servers {
    pub pids: Vec<u32>,
    /// What the figure covers, for the report.
    pub scope: &'static str,
}

/// Resident set figures in KiB, summed over the serving processes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rss {
    /// The sum of each process's peak during the workload (an upper bound of their joint peak).
    pub peak_kib: u64,
    /// Resident right after the workload.
    pub after_kib: u64,
}

impl Servers {
    /// The bench process itself: in dev mode the cluster runs in it, beside the driver and the
    /// workload's clients, whose memory the figure includes.
    pub fn this_process() -> Servers {
        Servers {
            pids: vec![std::process::id()],
            scope: "bench process (in-process dev cluster + driver + clients)",
        }
    }

    pub fn reset_peak(&self) {
        for pid in &self.pids {
            // Without permission the peak stays the process's lifetime peak; the report then
            // overstates, never understates, a workload's peak.
            let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
        }
    }

    pub fn current_kib(&self) -> u64 {
        self.pids.iter().map(|p| status_kib(*p, "VmRSS:")).sum()
    }

    pub fn rss(&self) -> Rss {
        Rss {
            peak_kib: self.pids.iter().map(|p| status_kib(*p, "VmHWM:")).sum(),
            after_kib: self.current_kib(),
        }
    }

    /// Resident KiB of each process.
    pub fn each_kib(&self) -> Vec<u64> {
        self.pids.iter().map(|p| status_kib(*p, "VmRSS:")).collect()
    }
}

/// A `kB` line of `/proc/<pid>/status` (0 where there is none).
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

impl Servers {
    /// Runs `work` with the peak reset before it; returns its result and the memory figures.
    pub async fn observe<T>(
        &self,
        work: impl std::future::Future<Output = anyhow::Result<T>>,
    ) -> anyhow::Result<(T, Rss)> {
        self.reset_peak();
        let out = work.await?;
        Ok((out, self.rss()))
    }
}

impl Servers {
    /// The resident set after a load: read 2 s after it and again `settle_secs` after it (when
    /// the shards' idle readers have closed), as a report fact with `before` and `peak`.
    pub async fn settle(&self, before: u64, peak: u64, settle_secs: u64) -> serde_json::Value {
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let after_2s = self.current_kib();
        let rest = settle_secs.saturating_sub(2);
        tokio::time::sleep(std::time::Duration::from_secs(rest)).await;
        serde_json::json!({"before": before, "peak": peak, "after_2s": after_2s,
               "settled": self.current_kib(), "settle_secs": settle_secs, "scope": self.scope})
    }
}
