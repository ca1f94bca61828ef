//! The cluster as separate processes: the `docgrid` binary started as config server, shards
//! and router on free ports (as `compat-tests/harness.rs` does), killed when dropped.

use crate::rss::Servers;
use mongodb::bson::Document;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct ProcessCluster {
    pub router_port: u16,
    pub shard_ports: Vec<u16>,
    children: Vec<Child>,
}

impl ProcessCluster {
    pub async fn start(dir: &Path, shards: usize) -> anyhow::Result<ProcessCluster> {
        let mut cluster = ProcessCluster {
            router_port: 0,
            shard_ports: Vec::new(),
            children: Vec::new(),
        };
        let config_port = free_port()?;
        let configdb = format!("127.0.0.1:{config_port}");
        let data = |name: &str| dir.join(name).display().to_string();
        cluster.spawn(&["configsvr", "--data-dir", &data("config")], config_port)?;
        for i in 0..shards {
            let port = free_port()?;
            let shard_dir = data(&format!("shard{i}"));
            cluster.spawn(
                &["shard", "--data-dir", &shard_dir, "--configdb", &configdb],
                port,
            )?;
            cluster.shard_ports.push(port);
        }
        cluster.router_port = free_port()?;
        cluster.spawn(&["router", "--configdb", &configdb], cluster.router_port)?;
        // Shards register with the config server in the background.
        let client = client(cluster.router_port, false).await?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while client
            .database("config")
            .collection::<Document>("shards")
            .estimated_document_count()
            .await
            .unwrap_or(0)
            < shards as u64
        {
            anyhow::ensure!(Instant::now() < deadline, "shards did not register");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(cluster)
    }

    fn spawn(&mut self, args: &[&str], port: u16) -> anyhow::Result<()> {
        let child = Command::new(env!("CARGO_BIN_EXE_docgrid"))
            .args(args)
            .args(["--port", &port.to_string()])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()?;
        self.children.push(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            anyhow::ensure!(Instant::now() < deadline, "nothing listens on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Config server, shards and router.
    pub fn servers(&self) -> Servers {
        Servers {
            pids: self.children.iter().map(|c| c.id()).collect(),
            scope: "router + config server + shard processes (sum)",
        }
    }
}

impl Drop for ProcessCluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A driver client of `127.0.0.1:port`, with a pool large enough for the concurrent workloads;
/// `direct` connects to that node alone (a shard), not discovering others.
pub async fn client(port: u16, direct: bool) -> anyhow::Result<mongodb::Client> {
    let direct = if direct { "&directConnection=true" } else { "" };
    Ok(mongodb::Client::with_uri_str(format!(
        "mongodb://127.0.0.1:{port}/?maxPoolSize=64&serverSelectionTimeoutMS=30000{direct}"
    ))
    .await?)
}

/// A free TCP port below Linux's ephemeral range, so that no outgoing connection takes it
/// between choosing it and the child binding it.
fn free_port() -> anyhow::Result<u16> {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let seed = (std::process::id() % 1500) as u16 * 8;
    for _ in 0..12_000 {
        let port = 20_000 + (seed + NEXT.fetch_add(1, Ordering::Relaxed)) % 12_000;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    anyhow::bail!("no free port")
}
