//! The status page (`actors::web`) served for `demo` and `watch --listen`: an actix-web server
//! on a thread of its own, stopped when the command ends.

use std::net::SocketAddr;

use actix_web::{App, HttpServer};
use actors::Client;

use super::CliError;

/// A running status page.
pub struct Page {
    /// Where to open it: `http://host:port/`.
    pub url: String,
    handle: actix_web::dev::ServerHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Page {
    /// Serves `client`'s status page on `listen` (port 0: any free port).
    pub fn serve(client: &Client, listen: SocketAddr) -> Result<Page, CliError> {
        let client = client.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new().name("status-page".into()).spawn(move || {
            let system = actix_web::rt::System::new();
            system.block_on(async move {
                let server =
                    HttpServer::new(move || App::new().service(actors::web::status_scope(client.clone())))
                        .workers(1)
                        .disable_signals()
                        .bind(listen);
                let server = match server {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Err(format!("the status page cannot listen on {listen}: {e}")));
                        return;
                    }
                };
                let bound = server.addrs().first().copied();
                let running = server.run();
                let _ = tx.send(bound.map(|a| (a, running.handle())).ok_or_else(|| "no address".to_string()));
                let _ = running.await;
            });
        })?;
        let (addr, handle) = rx.recv().map_err(|_| "the status page's thread ended")??;
        Ok(Page { url: format!("http://{addr}/"), handle, thread: Some(thread) })
    }

    /// Stops the server and waits for its thread.
    pub async fn stop(mut self) {
        self.handle.stop(true).await;
        if let Some(t) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
    }
}
