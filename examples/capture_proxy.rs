//! A logging proxy for capturing real client traffic as golden test data: listens on
//! LISTEN, forwards to UPSTREAM, and writes every message in both directions as hex to DIR.
//!
//! Usage: cargo run --example capture_proxy -- 127.0.0.1:27999 127.0.0.1:27017 captures/

use docgrid::wire::read_frame;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (listen, upstream, dir) = match args.as_slice() {
        [_, l, u, d] => (l.clone(), u.clone(), PathBuf::from(d)),
        _ => anyhow::bail!("usage: capture_proxy LISTEN UPSTREAM DIR"),
    };
    std::fs::create_dir_all(&dir)?;
    let listener = TcpListener::bind(&listen).await?;
    let counter = Arc::new(AtomicUsize::new(0));
    loop {
        let (client, _) = listener.accept().await?;
        let connection = counter.fetch_add(1, Ordering::Relaxed);
        let server = TcpStream::connect(&upstream).await?;
        let (mut cr, mut cw) = client.into_split();
        let (mut sr, mut sw) = server.into_split();
        let dir_in = dir.clone();
        tokio::spawn(async move {
            let mut n = 0;
            while let Ok(Some(frame)) = read_frame(&mut cr).await {
                let _ = std::fs::write(
                    dir_in.join(format!("c{connection:03}-{n:03}-request.hex")),
                    hex(&frame.bytes),
                );
                n += 1;
                if sw.write_all(&frame.bytes).await.is_err() {
                    break;
                }
            }
        });
        let dir_out = dir.clone();
        tokio::spawn(async move {
            let mut n = 0;
            while let Ok(Some(frame)) = read_frame(&mut sr).await {
                let _ = std::fs::write(
                    dir_out.join(format!("c{connection:03}-{n:03}-reply.hex")),
                    hex(&frame.bytes),
                );
                n += 1;
                if cw.write_all(&frame.bytes).await.is_err() {
                    break;
                }
            }
        });
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
