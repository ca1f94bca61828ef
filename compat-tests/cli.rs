//! The `docgrid` command line: help, the TOML settings file (flags win), JSON logs.

use crate::harness::{Process, client_for, free_port, wait_for_port};
use mongodb::bson::doc;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

#[test]
fn help_explains_the_roles() {
    let out = Command::new(env!("CARGO_BIN_EXE_docgrid"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for word in [
        "dev",
        "router",
        "configsvr",
        "shard",
        "--config",
        "--log-format",
        "--shards",
        "--data-dir",
    ] {
        assert!(text.contains(word), "--help mentions {word}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_docgrid"))
        .args(["router", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("--configdb"));
}

#[tokio::test]
async fn settings_file_with_flags_winning() {
    let dir = tempfile::tempdir().unwrap();
    let (file_port, flag_port) = (free_port(), free_port());
    let settings = dir.path().join("docgrid.toml");
    std::fs::write(
        &settings,
        format!(
            "port = {file_port}\nshards = 1\ndata_dir = \"{}\"\n",
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    let config = settings.display().to_string();
    {
        let _from_file = Process::spawn(&["--config", &config], file_port);
        let client = client_for(SocketAddr::from(([127, 0, 0, 1], file_port))).await;
        let shards = client
            .database("config")
            .collection::<mongodb::bson::Document>("shards");
        assert_eq!(shards.estimated_document_count().await.unwrap(), 1);
    }
    let _flag_wins = Process::spawn(
        &["--config", &config, "--port", &flag_port.to_string()],
        flag_port,
    );
    let client = client_for(SocketAddr::from(([127, 0, 0, 1], flag_port))).await;
    assert_eq!(
        client
            .database("admin")
            .run_command(doc! {"ping": 1})
            .await
            .unwrap()
            .get_f64("ok")
            .unwrap(),
        1.0
    );
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "nonsense_key = 1\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_docgrid"))
        .args(["--config", &bad.display().to_string()])
        .output()
        .unwrap();
    assert!(!out.status.success(), "unknown settings are refused");
}

#[test]
fn json_logs_are_one_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_docgrid"))
        .args([
            "--port",
            &port.to_string(),
            "--data-dir",
            &dir.path().display().to_string(),
            "--log-format",
            "json",
        ])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_port(port);
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let parsed: serde_json::Value = serde_json::from_str(&line).expect("a JSON log line");
    assert!(parsed.get("level").is_some() && parsed.get("fields").is_some());
}
