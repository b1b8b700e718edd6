//! GridFS: upload and download streams, `find`/`find_one` on the files collection,
//! renames, deletes and dropping the bucket.

use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson};
use mongodb::gridfs::FilesCollectionDocument;
use mongodb::options::{
    GridFsBucketOptions, GridFsDownloadByNameOptions, GridFsFindOptions, GridFsUploadOptions,
};
use mongodb::Client;

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let options =
        GridFsBucketOptions::builder().bucket_name("files".to_string()).chunk_size_bytes(4u32).build();
    let bucket = client.database(db).gridfs_bucket(options);
    bucket.drop().await?;

    // Two revisions of one name, one of another.
    let mut ids = Vec::new();
    for (name, text) in [("notes.txt", "first draft"), ("notes.txt", "second draft"), ("other.txt", "x")] {
        let mut upload = bucket.open_upload_stream(name).await?;
        upload.write_all(text.as_bytes()).await?;
        upload.close().await?;
        ids.push(upload.id().clone());
    }

    let mut text = String::new();
    bucket.open_download_stream(ids[0].clone()).await?.read_to_string(&mut text).await?;
    assert_eq!(text, "first draft");
    let mut newest = String::new();
    bucket.open_download_stream_by_name("notes.txt").await?.read_to_string(&mut newest).await?;
    assert_eq!(newest, "second draft");
    let mut oldest = String::new();
    let by_revision = GridFsDownloadByNameOptions::builder().revision(0).build();
    let mut download = bucket.open_download_stream_by_name("notes.txt").with_options(by_revision).await?;
    download.read_to_string(&mut oldest).await?;
    assert_eq!(oldest, "first draft");

    let first: Option<FilesCollectionDocument> =
        bucket.find_one(doc! { "filename": "notes.txt" }).sort(doc! { "uploadDate": 1, "_id": 1 }).await?;
    let first = first.expect("a files document");
    assert_eq!((first.id.clone(), first.length, first.chunk_size_bytes), (ids[0].clone(), 11, 4));

    // Per-file options: a chunk size of its own and metadata.
    let upload_options =
        GridFsUploadOptions::builder().chunk_size_bytes(2u32).metadata(doc! { "owner": "ada" }).build();
    let mut upload = bucket.open_upload_stream("tagged.txt").with_options(upload_options).await?;
    upload.write_all(b"abcde").await?;
    upload.close().await?;
    let tagged: FilesCollectionDocument =
        bucket.find_one(doc! { "filename": "tagged.txt" }).await?.expect("the tagged file");
    assert_eq!(tagged.chunk_size_bytes, 2);
    assert_eq!(tagged.metadata, Some(doc! { "owner": "ada" }));
    bucket.delete(upload.id().clone()).await?;

    let find = GridFsFindOptions::builder().sort(doc! { "filename": 1 }).limit(2i64).build();
    let files: Vec<FilesCollectionDocument> =
        bucket.find(doc! {}).with_options(find).await?.try_collect().await?;
    assert_eq!(files.len(), 2);
    assert!(files.iter().all(|f| f.filename.as_deref() == Some("notes.txt")));

    bucket.rename(ids[2].clone(), "renamed.txt").await?;
    bucket.rename_by_name("notes.txt", String::from("draft.txt")).await?;
    assert!(bucket.find_one(doc! { "filename": "draft.txt" }).await?.is_some());
    bucket.delete(ids[2].clone()).await?;
    bucket.delete_by_name("draft.txt").await?;
    assert!(bucket.find_one(doc! {}).await?.is_none());
    let missing = bucket.delete(Bson::Int32(404)).await;
    assert!(missing.is_err());
    bucket.drop().await?;
    Ok(())
}
