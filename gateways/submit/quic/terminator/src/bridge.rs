//! The Unix-socket bridge to the Node pipeline. Frames: u32 LE body length, then the body (first byte = type).
//!
//! terminator → Node
//!   0x00 READY   addr (utf8 "host:port")                         the UDP port is bound
//!   0x01 OPEN    conn u32, ip_len u8, ip (utf8), client cert DER   a handshake completed; Node answers VERDICT
//!   0x02 TX      conn u32, req u32, kind u8, bytes                 kind 1 stream (answered by STATUS), 2 uni, 3 datagram
//!   0x03 CLOSED  conn u32, reason u8                               0 peer, 1 idle timeout, 2 local, 3 error
//!   0x04 EVENT   code u8                                           see `Event`
//! Node → terminator
//!   0x81 VERDICT conn u32, code u32 (0 = admitted), reason (utf8)  non-zero: close with that application code
//!   0x82 STATUS  req u32, status u8                                the answer to a kind-1 TX
//!
//! The outgoing queue is bounded: a slow Node makes streams and datagram reads wait (QUIC flow control and
//! quinn's bounded datagram buffer then push back on clients) rather than growing memory.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::{
        atomic::{AtomicU32, Ordering},
        Arc, Mutex,
    },
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt, BufWriter},
    net::UnixStream,
    sync::{mpsc, oneshot},
};

/// Frames waiting for the socket (each ≤ ~1.3 KB: transactions are capped at 1 + 1,233 bytes before they get here).
const OUT_QUEUE_FRAMES: usize = 4_096;
/// Largest frame Node may send (a verdict with its reason); anything bigger means a broken peer.
const MAX_IN_FRAME: usize = 4096;

#[derive(Clone, Copy)]
pub enum TxKind {
    Stream = 1,
    Uni = 2,
    Datagram = 3,
}

#[derive(Clone, Copy)]
pub enum CloseReason {
    Peer = 0,
    IdleTimeout = 1,
    Local = 2,
    Error = 3,
}

#[derive(Clone, Copy)]
pub enum Event {
    HandshakeRateLimited = 1,
    ConnectionCapReached = 2,
    StreamLimitReached = 3,
    HandshakeFailed = 4,
}

type Verdict = (u32, String);

struct Shared {
    out: mpsc::Sender<Vec<u8>>,
    next_conn: AtomicU32,
    next_req: AtomicU32,
    verdicts: Mutex<HashMap<u32, oneshot::Sender<Verdict>>>,
    statuses: Mutex<HashMap<u32, oneshot::Sender<u8>>>,
    /// Node closed the bridge: the service is stopping.
    gone: tokio::sync::Notify,
}

#[derive(Clone)]
pub struct Bridge(Arc<Shared>);

fn frame(kind: u8, body_len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(4 + 1 + body_len);
    f.extend_from_slice(&((1 + body_len) as u32).to_le_bytes());
    f.push(kind);
    f
}

impl Bridge {
    pub async fn connect(path: &str) -> std::io::Result<Bridge> {
        let stream = UnixStream::connect(path).await?;
        let (mut rd, wr) = stream.into_split();
        let (out, mut rx) = mpsc::channel::<Vec<u8>>(OUT_QUEUE_FRAMES);
        let shared = Arc::new(Shared {
            out,
            next_conn: AtomicU32::new(1),
            next_req: AtomicU32::new(1),
            verdicts: Mutex::new(HashMap::new()),
            statuses: Mutex::new(HashMap::new()),
            gone: tokio::sync::Notify::new(),
        });
        // Writer: batch whatever is queued into one write, flush when the queue is momentarily empty.
        tokio::spawn(async move {
            let mut w = BufWriter::with_capacity(64 * 1024, wr);
            while let Some(f) = rx.recv().await {
                if w.write_all(&f).await.is_err() {
                    break;
                }
                while let Ok(f) = rx.try_recv() {
                    if w.write_all(&f).await.is_err() {
                        break;
                    }
                }
                if w.flush().await.is_err() {
                    break;
                }
            }
        });
        // Reader: Node's answers. Node closing the socket means the service is stopping: so do we (main waits
        // on `stopped()` and closes the endpoint, so clients get a CONNECTION_CLOSE rather than a timeout).
        let s = shared.clone();
        tokio::spawn(async move {
            let mut len = [0u8; 4];
            let mut body = Vec::with_capacity(MAX_IN_FRAME);
            loop {
                if rd.read_exact(&mut len).await.is_err() {
                    break;
                }
                let n = u32::from_le_bytes(len) as usize;
                if n == 0 || n > MAX_IN_FRAME {
                    eprintln!("meridian-quic-terminator: bad bridge frame length {n}");
                    break;
                }
                body.resize(n, 0);
                if rd.read_exact(&mut body).await.is_err() {
                    break;
                }
                s.dispatch(&body);
            }
            s.gone.notify_one();
        });
        Ok(Bridge(shared))
    }

    /// Resolves when Node has closed the bridge.
    pub async fn stopped(&self) {
        self.0.gone.notified().await
    }

    fn push(&self, f: Vec<u8>) {
        // Control frames are rare and tiny; if the queue is full they wait on their own task.
        if let Err(mpsc::error::TrySendError::Full(f)) = self.0.out.try_send(f) {
            let out = self.0.out.clone();
            tokio::spawn(async move {
                let _ = out.send(f).await;
            });
        }
    }

    pub fn ready(&self, addr: SocketAddr) {
        let a = addr.to_string();
        let mut f = frame(0x00, a.len());
        f.extend_from_slice(a.as_bytes());
        self.push(f);
    }

    /// Announces an authenticated connection; the receiver yields Node's verdict.
    pub fn open(&self, ip: IpAddr, cert: &[u8]) -> (u32, oneshot::Receiver<Verdict>) {
        let id = self.0.next_conn.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.0.verdicts.lock().unwrap().insert(id, tx);
        let ip = ip.to_canonical().to_string();
        let mut f = frame(0x01, 4 + 1 + ip.len() + cert.len());
        f.extend_from_slice(&id.to_le_bytes());
        f.push(ip.len() as u8);
        f.extend_from_slice(ip.as_bytes());
        f.extend_from_slice(cert);
        self.push(f);
        (id, rx)
    }

    /// Hands one transaction to Node. For a stream, the receiver yields its status; None if Node is gone.
    pub async fn tx(&self, conn: u32, kind: TxKind, bytes: &[u8]) -> Option<oneshot::Receiver<u8>> {
        let (req, rx) = match kind {
            TxKind::Stream => {
                let req = self.0.next_req.fetch_add(1, Ordering::Relaxed);
                let (tx, rx) = oneshot::channel();
                self.0.statuses.lock().unwrap().insert(req, tx);
                (req, Some(rx))
            }
            _ => (0, None),
        };
        let mut f = frame(0x02, 4 + 4 + 1 + bytes.len());
        f.extend_from_slice(&conn.to_le_bytes());
        f.extend_from_slice(&req.to_le_bytes());
        f.push(kind as u8);
        f.extend_from_slice(bytes);
        if self.0.out.send(f).await.is_err() {
            self.0.statuses.lock().unwrap().remove(&req);
            return None;
        }
        rx
    }

    pub fn closed(&self, conn: u32, reason: CloseReason) {
        self.0.verdicts.lock().unwrap().remove(&conn);
        let mut f = frame(0x03, 5);
        f.extend_from_slice(&conn.to_le_bytes());
        f.push(reason as u8);
        self.push(f);
    }

    pub fn event(&self, e: Event) {
        let mut f = frame(0x04, 1);
        f.push(e as u8);
        self.push(f);
    }
}

impl Shared {
    fn dispatch(&self, body: &[u8]) {
        match body[0] {
            0x81 if body.len() >= 9 => {
                let conn = u32::from_le_bytes(body[1..5].try_into().unwrap());
                let code = u32::from_le_bytes(body[5..9].try_into().unwrap());
                let reason = String::from_utf8_lossy(&body[9..]).into_owned();
                if let Some(tx) = self.verdicts.lock().unwrap().remove(&conn) {
                    let _ = tx.send((code, reason));
                }
            }
            0x82 if body.len() == 6 => {
                let req = u32::from_le_bytes(body[1..5].try_into().unwrap());
                if let Some(tx) = self.statuses.lock().unwrap().remove(&req) {
                    let _ = tx.send(body[5]);
                }
            }
            t => eprintln!("meridian-quic-terminator: unknown bridge frame type {t:#x}"),
        }
    }
}
