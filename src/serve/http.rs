//! The connection loop: each accepted connection is served by hyper's HTTP/1 machinery with a
//! deadline on its request headers (a slow or half-open client is dropped, not kept forever),
//! and at most so many connections are open at once.

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Limits on connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Headers of a request must arrive within this.
    pub header_timeout: Duration,
    /// More open connections than this are closed at once.
    pub max_connections: usize,
}

/// Accepts connections until Ctrl+C (or SIGTERM).
pub async fn serve(listener: TcpListener, app: Router, limits: ConnectionLimits) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut shutdown => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of file descriptors and the like: pause rather than spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            continue; // Too many connections: this one is closed (dropped) right away.
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(TokioIo::new(stream), service);
            // A connection's failure (a reset, a timeout) concerns that client alone.
            let _ = connection.await;
            drop(permit);
        });
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {},
                _ = term.recv() => {},
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
