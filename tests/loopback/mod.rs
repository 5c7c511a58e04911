//! A test server on 127.0.0.1:0 in a thread and runtime of its own, stopped when dropped (and by
//! itself after two minutes at most, so a forgotten one never outlives the test run).
#![allow(dead_code)]

use std::time::Duration;

use futures_util::future::BoxFuture;

pub struct Server {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Binds a listener and runs `run(listener, stop)`, where `stop` completes when the server is
/// dropped; `run` should return soon after.
pub fn start<F, Fut>(run: F) -> Server
where
    F: FnOnce(tokio::net::TcpListener, BoxFuture<'static, ()>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            url_tx
                .send(format!("http://{}", listener.local_addr().unwrap()))
                .unwrap();
            let stop: BoxFuture<'static, ()> = Box::pin(async move {
                tokio::select! {
                    _ = stop_rx => {}
                    _ = tokio::time::sleep(Duration::from_secs(120)) => {}
                }
            });
            run(listener, stop).await;
        });
    });
    Server {
        url: url_rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        stop: Some(stop_tx),
        thread: Some(thread),
    }
}
