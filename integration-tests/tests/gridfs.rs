//! GridFS end to end: a file of several chunks streamed in with `futures::io::copy` and back
//! out byte for byte, revisions by name, an aborted or dropped upload leaving no chunk, and a missing
//! chunk reported as a typed error through the reader's `io::Error`. Runs on the simulator
//! and on `MONGODB_URI`. Real time (sockets).

use actors::error::GridFsErrorKind;
use actors::gridfs::GridFsBucketOptions;
use bson::{doc, Document};
use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use futures_util::TryStreamExt;

use crate::support;
use support::replica_set_with_primary;

/// The crate's error inside a stream's `io::Error`.
fn gridfs_kind(e: std::io::Error) -> GridFsErrorKind {
    let inner = e.into_inner().expect("an error of this crate");
    let e = *inner.downcast::<actors::Error>().expect("an actors::Error");
    match *e.kind {
        actors::ErrorKind::GridFs(kind) => kind,
        other => panic!("expected a GridFS error, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_goes_in_and_out_of_a_bucket_byte_for_byte() {
    let s = replica_set_with_primary(1, "").await;
    let db = s.database("gridfs_e2e");
    let options = GridFsBucketOptions {
        bucket_name: Some("docs".into()),
        chunk_size_bytes: Some(1000),
        ..GridFsBucketOptions::default()
    };
    let bucket = db.gridfs_bucket(options);
    let _ = bucket.drop().await;
    let data: Vec<u8> = (0..4321u32).map(|i| (i * 7 % 251) as u8).collect();

    let mut upload =
        bucket.open_upload_stream("report.bin").metadata(doc! {"owner": "ada"}).await.expect("open");
    futures_util::io::copy(futures_util::io::Cursor::new(&data), &mut upload).await.expect("copy in");
    upload.close().await.expect("close");
    let id = upload.id().clone();

    let chunks = db.collection::<Document>("docs.chunks");
    assert_eq!(
        chunks.count_documents(doc! {"files_id": id.clone()}).await.expect("count"),
        5,
        "4321 bytes in 1000-byte chunks"
    );
    let indexes = chunks.list_index_names().await.expect("indexes");
    assert!(indexes.iter().any(|n| n == "files_id_1_n_1"), "the chunks index was created: {indexes:?}");

    let mut out = Vec::new();
    let mut download = bucket.open_download_stream(id.clone()).await.expect("open download");
    assert_eq!(download.file().length, 4321);
    assert_eq!(download.file().metadata, Some(doc! {"owner": "ada"}));
    download.read_to_end(&mut out).await.expect("read");
    assert_eq!(out, data, "the same bytes come back");

    // A second revision under the same name: the newest by default, the first on request.
    let mut second = bucket.open_upload_stream("report.bin").await.expect("open");
    second.write_all(b"v2").await.expect("write");
    second.close().await.expect("close");
    let mut newest = Vec::new();
    bucket
        .open_download_stream_by_name("report.bin")
        .await
        .expect("newest")
        .read_to_end(&mut newest)
        .await
        .expect("read");
    assert_eq!(newest, b"v2");
    let mut first = Vec::new();
    let by_rev = bucket.open_download_stream_by_name("report.bin").revision(0).await.expect("first");
    by_rev.take(3).read_to_end(&mut first).await.expect("read");
    assert_eq!(first, data[..3]);
    let missing =
        bucket.open_download_stream_by_name("report.bin").revision(5).await.expect_err("no such revision");
    assert!(
        matches!(
            *missing.kind,
            actors::ErrorKind::GridFs(GridFsErrorKind::RevisionNotFound { revision: 5, .. })
        ),
        "{missing}"
    );

    // An aborted upload leaves nothing behind.
    let mut aborted = bucket.open_upload_stream("partial").await.expect("open");
    aborted.write_all(&data).await.expect("write");
    aborted.flush().await.expect("flush");
    let aborted_id = aborted.id().clone();
    aborted.abort().await.expect("abort");
    assert_eq!(chunks.count_documents(doc! {"files_id": aborted_id}).await.expect("count"), 0);
    assert!(aborted.write_all(b"more").await.is_err(), "an aborted stream takes no more data");

    // A missing chunk is a typed error, not short data.
    chunks.delete_one(doc! {"files_id": id.clone(), "n": 2}).await.expect("delete a chunk");
    let mut broken = Vec::new();
    let e = bucket
        .open_download_stream(id.clone())
        .await
        .expect("open")
        .read_to_end(&mut broken)
        .await
        .expect_err("chunk 2 is missing");
    assert!(matches!(gridfs_kind(e), GridFsErrorKind::MissingChunk { n: 2, .. }));

    bucket.delete(id.clone()).await.expect("delete");
    let gone = bucket.open_download_stream(id).await.expect_err("deleted");
    assert!(matches!(*gone.kind, actors::ErrorKind::GridFs(GridFsErrorKind::FileNotFound { .. })), "{gone}");
    assert!(matches!(*gone.kind, actors::ErrorKind::GridFs(_)));
    let names: Vec<Option<String>> = bucket
        .find(doc! {})
        .await
        .expect("find")
        .try_collect::<Vec<_>>()
        .await
        .expect("files")
        .into_iter()
        .map(|f| f.filename)
        .collect();
    assert_eq!(names, vec![Some("report.bin".to_string())], "only the second revision is left");
}

/// An upload dropped before its close completed leaves no chunk without a file: dropped
/// after storing chunks, or at each poll of its `close`, the file ends up whole or absent
/// (the dropped stream deletes what it stored in the background).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_upload_leaves_its_file_whole_or_absent() {
    let s = replica_set_with_primary(1, "").await;
    let db = s.database("gridfs_drop");
    let options = GridFsBucketOptions { chunk_size_bytes: Some(100), ..GridFsBucketOptions::default() };
    let bucket = db.gridfs_bucket(options);
    let (files, chunks) = (db.collection::<Document>("fs.files"), db.collection::<Document>("fs.chunks"));
    let data = vec![7u8; 350];
    let settled = |id: bson::Bson| {
        let (files, chunks) = (files.clone(), chunks.clone());
        async move {
            // Whole (one files document, 4 chunks) or absent (neither), once the background
            // delete, if any, has run.
            for _ in 0..200 {
                let f = files.count_documents(doc! {"_id": id.clone()}).await.expect("count files");
                let c = chunks.count_documents(doc! {"files_id": id.clone()}).await.expect("count chunks");
                if (f, c) == (1, 4) || (f, c) == (0, 0) {
                    return f == 1;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("file {id} neither whole nor absent");
        }
    };

    // Dropped with stored chunks and no close: they are deleted.
    let mut upload = bucket.open_upload_stream("dropped").await.expect("open");
    upload.write_all(&data).await.expect("write");
    upload.flush().await.expect("flush");
    let id = upload.id().clone();
    assert!(chunks.count_documents(doc! {"files_id": id.clone()}).await.expect("count") > 0);
    drop(upload);
    assert!(!settled(id).await, "absent");

    // Dropped with a chunk write in flight: it runs to its end, then what it wrote is deleted.
    let mut upload = bucket.open_upload_stream("in flight").await.expect("open");
    upload.write_all(&data).await.expect("write");
    let id = upload.id().clone();
    drop(upload);
    assert!(!settled(id).await, "absent");

    // Dropped at each poll of its close (the chunks written before it, so the first poll
    // starts the close): never polled, it is deleted; polled, it finishes in the background.
    let mut whole = 0;
    for polls in 0..40 {
        let mut upload = bucket.open_upload_stream("closing").await.expect("open");
        upload.write_all(&data).await.expect("write");
        upload.flush().await.expect("flush");
        let id = upload.id().clone();
        let mut close = Box::pin(upload.close());
        let mut done = false;
        for _ in 0..polls {
            if futures_util::poll!(close.as_mut()).is_ready() {
                done = true;
                break;
            }
            tokio::task::yield_now().await;
        }
        drop(close);
        drop(upload);
        let kept = settled(id).await;
        assert_eq!(kept, polls > 0 || done, "polled {polls} times: a close once started completes");
        whole += usize::from(kept);
    }
    assert_eq!(whole, 39);
}
