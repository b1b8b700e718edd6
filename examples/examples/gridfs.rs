//! GridFS: store a file in a bucket by streaming it in (`futures::io::copy` into the upload
//! stream), read it back as a stream, keep revisions under one name, and delete it.
//!
//! ```text
//! cargo run -p mongo-actors-examples --example gridfs                          # embedded replica set
//! cargo run -p mongo-actors-examples --example gridfs -- --uri 'mongodb://host/?replicaSet=rs0'
//! ```

use actors::bson::{doc, Bson};
use actors::gridfs::GridFsBucketOptions;
use actors::Client;
use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use futures_util::TryStreamExt;
use mongo_actors_examples::{check, deployment, Args, BoxError};

#[actix::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::from_env();
    let (uri, _simulator) = deployment(&args, 3)?;
    let client = Client::with_uri_str(&uri).await?;
    let db = client.database("gridfs_example");
    // 64 KiB chunks; the default is 255 KiB.
    let options = GridFsBucketOptions { chunk_size_bytes: Some(64 * 1024), ..Default::default() };
    let bucket = db.gridfs_bucket(options);
    bucket.drop().await?;

    // A 300 KiB "file": anything that implements futures::io::AsyncRead can be copied in.
    let content: Vec<u8> = (0..300 * 1024u32).map(|i| (i % 251) as u8).collect();
    let mut upload = bucket.open_upload_stream("report.bin").metadata(doc! {"owner": "ada"}).await?;
    let copied = futures_util::io::copy(futures_util::io::Cursor::new(&content), &mut upload).await?;
    upload.close().await?; // stores the last chunk and the files document
    let id: Bson = upload.id().clone();
    println!("uploaded {copied} bytes as {id}");

    // Stream it back: the download checks each chunk's number and size as it reads.
    let mut download = bucket.open_download_stream(id.clone()).await?;
    println!("files document: {:?}", download.file());
    let mut back = Vec::new();
    download.read_to_end(&mut back).await?;
    println!("downloaded {} bytes, identical: {}", back.len(), back == content);

    // A second revision under the same name; by name, the newest is read unless asked otherwise.
    let mut v2 = bucket.open_upload_stream("report.bin").await?;
    v2.write_all(b"version 2").await?;
    v2.close().await?;
    let mut newest = Vec::new();
    bucket.open_download_stream_by_name("report.bin").await?.read_to_end(&mut newest).await?;
    println!("newest revision: {:?}", String::from_utf8_lossy(&newest));
    let revisions = bucket.find(doc! {"filename": "report.bin"}).await?.try_collect::<Vec<_>>().await?.len();

    bucket.delete_by_name("report.bin").await?;
    let left = bucket.find(doc! {}).await?.try_collect::<Vec<_>>().await?.len();
    println!("revisions: {revisions}, left after delete_by_name: {left}");

    if args.smoke {
        check(back == content, "the downloaded bytes are the uploaded ones")?;
        check(copied == content.len() as u64, "every byte was copied in")?;
        check(newest == b"version 2", "by name, the newest revision")?;
        check(revisions == 2 && left == 0, format!("2 revisions then none, not {revisions} and {left}"))?;
        println!("smoke ok");
    }
    client.shutdown().await;
    Ok(())
}
