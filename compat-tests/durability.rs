//! Acknowledged writes survive `kill -9` of the process, and `j: true` writes are fsynced.

use crate::harness::{Process, client_for, free_port};
use mongodb::bson::{Document, doc};
use mongodb::options::{Acknowledgment, WriteConcern};
use std::net::SocketAddr;

#[tokio::test]
async fn acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().display().to_string();
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut process = Process::spawn(&["--port", &port.to_string(), "--data-dir", &data], port);
    {
        let client = client_for(addr).await;
        let coll = client.database("app").collection::<Document>("durable");
        coll.insert_many((0..1000).map(|i| doc! {"_id": i, "v": 0}))
            .await
            .unwrap();
        for i in 1000..1010 {
            coll.insert_one(doc! {"_id": i, "v": 0}).await.unwrap();
        }
        coll.update_many(doc! {"_id": {"$lt": 10}}, doc! {"$set": {"v": 1}})
            .await
            .unwrap();
        coll.delete_one(doc! {"_id": 1009}).await.unwrap();
        let journaled = WriteConcern::builder()
            .w(Acknowledgment::Majority)
            .journal(true)
            .build();
        coll.insert_one(doc! {"_id": "j", "v": 2})
            .write_concern(journaled)
            .await
            .unwrap();
    }
    process.kill();
    let _restarted = Process::spawn(&["--port", &port.to_string(), "--data-dir", &data], port);
    let client = client_for(addr).await;
    let coll = client.database("app").collection::<Document>("durable");
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1010);
    assert_eq!(coll.count_documents(doc! {"v": 1}).await.unwrap(), 10);
    assert!(coll.find_one(doc! {"_id": 1009}).await.unwrap().is_none());
    assert_eq!(
        coll.find_one(doc! {"_id": "j"})
            .await
            .unwrap()
            .unwrap()
            .get_i32("v")
            .unwrap(),
        2
    );
}
