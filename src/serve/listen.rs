//! The accept loop: every connection is served by hyper's HTTP/1 server with a timer, so a
//! client that sends part of a request head, or nothing, or sits idle on a kept-alive
//! connection, is dropped after [`HEADER_READ_TIMEOUT`] — before any token check could even
//! run. A client address holds at most [`MAX_CONNECTIONS_PER_IP`] connections at once; the
//! next is answered 503 and closed. At shutdown open connections finish their request and
//! close.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// How long a client may take to send a request head, counted from when the server starts
/// waiting for it: on a new connection and between requests on a kept-alive one.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections one client address may hold open at once.
pub const MAX_CONNECTIONS_PER_IP: usize = 64;
/// How long shutdown waits for open connections to finish.
const DRAIN_WAIT: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` until `stop` resolves, then lets open connections finish
/// (up to [`DRAIN_WAIT`]).
pub async fn serve_until(
    listener: TcpListener,
    app: Router,
    stop: impl std::future::Future<Output = ()>,
) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let graceful = GracefulShutdown::new();
    let counts = Arc::new(ConnectionCounts::default());
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was taken:
                    // wait a moment rather than spin, and go on.
                    tracing::warn!("odek serve: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(slot) = counts.admit(peer.ip()) else {
            tokio::spawn(refuse(stream));
            continue;
        };
        let router = app.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            tower::ServiceExt::<hyper::Request<Incoming>>::oneshot(router.clone(), req)
        });
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            // A client that goes away or times out ends its connection; nothing to report.
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(DRAIN_WAIT, graceful.shutdown()).await;
}

/// Answers a connection over the per-address cap with 503 and closes it.
async fn refuse(mut stream: TcpStream) {
    let body = format!(
        "{{\"error\":\"too many connections from this address ({MAX_CONNECTIONS_PER_IP} at most): close some and retry\"}}"
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncache-control: no-store\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// Open connections per client address.
#[derive(Default)]
struct ConnectionCounts(Mutex<HashMap<IpAddr, usize>>);

/// One admitted connection; dropping it frees its place.
struct Slot {
    counts: Arc<ConnectionCounts>,
    ip: IpAddr,
}

impl ConnectionCounts {
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Slot> {
        let mut counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let open = counts.entry(ip).or_insert(0);
        if *open >= MAX_CONNECTIONS_PER_IP {
            return None;
        }
        *open += 1;
        Some(Slot {
            counts: self.clone(),
            ip,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.counts.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = counts.get_mut(&self.ip) {
            *open -= 1;
            if *open == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_holds_at_most_the_cap_and_a_closed_connection_frees_its_place() {
        let counts = Arc::new(ConnectionCounts::default());
        let a: IpAddr = "127.0.0.1".parse().expect("ip");
        let b: IpAddr = "127.0.0.2".parse().expect("ip");
        let mut held: Vec<Slot> = (0..MAX_CONNECTIONS_PER_IP)
            .map(|_| counts.admit(a).expect("under the cap"))
            .collect();
        assert!(counts.admit(a).is_none());
        assert!(counts.admit(b).is_some());
        held.pop();
        assert!(counts.admit(a).is_some());
        drop(held);
        assert!(counts.0.lock().expect("lock").get(&a).is_none());
    }
}
