//! QUIC terminator for the submission service.
//!
//! It only terminates QUIC (quinn + rustls) and relays: every transaction it receives goes to the Node
//! process over one Unix socket, and the status byte Node answers goes back on the stream. Every decision
//! (is this key known, how many connections may it hold, is the transaction acceptable) is Node's; this
//! process enforces only what must live inside the QUIC stack: streams per connection, the idle timeout,
//! the handshake rate per IP and the total number of connections.
//!
//! Why a separate process: the measured Node QUIC stack (@matrixai/quic) reached a few dozen streams/s per
//! connection and exposes no datagram API; see the README.
//!
//! Bridge frames (both directions): u32 LE body length, then the body; the codec mirror is
//! `gateways/submit/quic/bridge-codec.ts`, which documents every frame.

mod bridge;
mod limits;
mod tls;

use bridge::{Bridge, CloseReason, Event, TxKind};
use limits::HandshakeLimiter;
use quinn::{Connection, EndpointConfig, IdleTimeout, ServerConfig, TransportConfig, VarInt};
use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

/// 0x01 version byte + the largest acceptable transaction (1,232) + 1: enough for the pipeline to see that a
/// transaction is too large, without ever buffering more than this per stream.
const STREAM_READ_CAP: usize = 1 + 1232 + 1;
/// How long a connection may wait for Node's verdict on its key before it is closed as "server busy".
const VERDICT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a stream may wait for its status; the SDK gives up after 100 ms, this only frees the task.
const STATUS_TIMEOUT: Duration = Duration::from_secs(10);

struct Args {
    listen: SocketAddr,
    bridge: String,
    max_bidi_streams: u32,
    max_uni_streams: u32,
    idle_timeout_ms: u32,
    handshakes_per_sec: f64,
    handshake_burst: f64,
    max_connections: usize,
    datagram_buffer_bytes: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        listen: "127.0.0.1:5000".parse().unwrap(),
        bridge: String::new(),
        max_bidi_streams: 256,
        max_uni_streams: 64,
        idle_timeout_ms: 30_000,
        handshakes_per_sec: 100.0,
        handshake_burst: 200.0,
        max_connections: 4096,
        datagram_buffer_bytes: 256 * 1024,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let (k, v) = match pair {
            [k, v] => (k.as_str(), v.as_str()),
            _ => return Err(format!("missing value after {}", pair[0])),
        };
        let bad = |e: &dyn std::fmt::Display| format!("{k}: {e}");
        match k {
            "--listen" => a.listen = v.parse().map_err(|e| bad(&e))?,
            "--bridge" => a.bridge = v.to_string(),
            "--max-bidi-streams" => a.max_bidi_streams = v.parse().map_err(|e| bad(&e))?,
            "--max-uni-streams" => a.max_uni_streams = v.parse().map_err(|e| bad(&e))?,
            "--idle-timeout-ms" => a.idle_timeout_ms = v.parse().map_err(|e| bad(&e))?,
            "--handshakes-per-sec" => a.handshakes_per_sec = v.parse().map_err(|e| bad(&e))?,
            "--handshake-burst" => a.handshake_burst = v.parse().map_err(|e| bad(&e))?,
            "--max-connections" => a.max_connections = v.parse().map_err(|e| bad(&e))?,
            "--datagram-buffer-bytes" => a.datagram_buffer_bytes = v.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown option {k}")),
        }
    }
    if a.bridge.is_empty() {
        return Err("--bridge <unix socket path> is required".into());
    }
    Ok(a)
}

fn server_config(a: &Args) -> Result<ServerConfig, Box<dyn std::error::Error>> {
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls::server_tls()?)?;
    let mut transport = TransportConfig::default();
    transport.max_concurrent_bidi_streams(VarInt::from_u32(a.max_bidi_streams));
    transport.max_concurrent_uni_streams(VarInt::from_u32(a.max_uni_streams));
    transport.max_idle_timeout(Some(IdleTimeout::from(VarInt::from_u32(a.idle_timeout_ms))));
    // Datagrams on (RFC 9221); the buffer bounds what one connection may queue before quinn drops the oldest.
    transport.datagram_receive_buffer_size(Some(a.datagram_buffer_bytes));
    let mut sc = ServerConfig::with_crypto(Arc::new(crypto));
    sc.transport_config(Arc::new(transport));
    sc.max_incoming(a.max_connections.max(16));
    Ok(sc)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("meridian-quic-terminator: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(args).await {
        eprintln!("meridian-quic-terminator: {e}");
        std::process::exit(1);
    }
    // Connection tasks may still hold the runtime; the endpoint is closed, so leave now.
    std::process::exit(0);
}

async fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let bridge = Bridge::connect(&a.bridge).await?;
    let mut ec = EndpointConfig::default();
    // The SDK starts at an MTU of 1,472 and probes upward: accept any UDP payload a datagram can carry.
    ec.max_udp_payload_size(65_527)?;
    let socket = std::net::UdpSocket::bind(a.listen)?;
    let endpoint = quinn::Endpoint::new(ec, Some(server_config(&a)?), socket, Arc::new(quinn::TokioRuntime))?;
    bridge.ready(endpoint.local_addr()?);

    let mut limiter = HandshakeLimiter::new(a.handshakes_per_sec, a.handshake_burst);
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let incoming = tokio::select! {
            i = endpoint.accept() => match i { Some(i) => i, None => break },
            _ = bridge.stopped() => break,
        };
        if open.load(Ordering::Relaxed) >= a.max_connections {
            bridge.event(Event::ConnectionCapReached);
            incoming.refuse();
            continue;
        }
        if !limiter.allow(incoming.remote_address().ip()) {
            bridge.event(Event::HandshakeRateLimited);
            incoming.refuse();
            continue;
        }
        let (bridge, open) = (bridge.clone(), open.clone());
        let max_bidi = a.max_bidi_streams as usize;
        tokio::spawn(async move {
            let Ok(connecting) = incoming.accept() else { return };
            let Ok(conn) = connecting.await else {
                bridge.event(Event::HandshakeFailed);
                return;
            };
            open.fetch_add(1, Ordering::Relaxed);
            serve_connection(conn, bridge, max_bidi).await;
            open.fetch_sub(1, Ordering::Relaxed);
        });
    }
    endpoint.close(VarInt::from_u32(0), b"server stopping");
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    Ok(())
}

/// One authenticated connection: ask Node about the key, then relay streams and datagrams until it closes.
async fn serve_connection(conn: Connection, bridge: Bridge, max_bidi: usize) {
    let cert = tls::peer_cert(&conn).unwrap_or_default();
    let (id, verdict) = bridge.open(conn.remote_address().ip(), &cert);
    let admitted = match tokio::time::timeout(VERDICT_TIMEOUT, verdict).await {
        Ok(Ok((0, _))) => true,
        Ok(Ok((code, reason))) => {
            conn.close(VarInt::from_u32(code), reason.as_bytes());
            false
        }
        _ => {
            conn.close(VarInt::from_u32(0x7f), b"server busy");
            false
        }
    };
    if admitted {
        relay(&conn, &bridge, id, max_bidi).await;
    }
    let reason = match conn.closed().await {
        quinn::ConnectionError::TimedOut => CloseReason::IdleTimeout,
        quinn::ConnectionError::LocallyClosed => CloseReason::Local,
        quinn::ConnectionError::ApplicationClosed(_) | quinn::ConnectionError::ConnectionClosed(_) => CloseReason::Peer,
        _ => CloseReason::Error,
    };
    bridge.closed(id, reason);
}

async fn relay(conn: &Connection, bridge: &Bridge, id: u32, max_bidi: usize) {
    let open_bidi = Arc::new(AtomicUsize::new(0));
    loop {
        tokio::select! {
            bi = conn.accept_bi() => {
                let Ok((send, recv)) = bi else { return };
                // Reaching the per-connection stream limit is counted; QUIC flow control makes the client wait.
                if open_bidi.fetch_add(1, Ordering::Relaxed) + 1 >= max_bidi {
                    bridge.event(Event::StreamLimitReached);
                }
                let (bridge, open_bidi) = (bridge.clone(), open_bidi.clone());
                tokio::spawn(async move {
                    answer_stream(send, recv, &bridge, id).await;
                    open_bidi.fetch_sub(1, Ordering::Relaxed);
                });
            }
            uni = conn.accept_uni() => {
                let Ok(recv) = uni else { return };
                let bridge = bridge.clone();
                tokio::spawn(async move {
                    if let Some(bytes) = read_capped(recv).await {
                        bridge.tx(id, TxKind::Uni, &bytes).await;
                    }
                });
            }
            dg = conn.read_datagram() => {
                let Ok(bytes) = dg else { return };
                // Like streams: 1,233 bytes are enough for the pipeline to answer "too large".
                bridge.tx(id, TxKind::Datagram, &bytes[..bytes.len().min(STREAM_READ_CAP - 1)]).await;
            }
        }
    }
}

/// Bidirectional stream: the whole stream (version byte included) goes to Node, which frames and judges it;
/// its status goes back as `[0x01, status]`. No status (Node gone) resets the stream instead of inventing one.
async fn answer_stream(mut send: quinn::SendStream, recv: quinn::RecvStream, bridge: &Bridge, id: u32) {
    let Some(bytes) = read_capped(recv).await else { return };
    let status = bridge.tx(id, TxKind::Stream, &bytes).await;
    match status {
        Some(rx) => match tokio::time::timeout(STATUS_TIMEOUT, rx).await {
            Ok(Ok(s)) => {
                let _ = send.write_all(&[0x01, s]).await;
                let _ = send.finish();
            }
            _ => {
                let _ = send.reset(VarInt::from_u32(0));
            }
        },
        None => {
            let _ = send.reset(VarInt::from_u32(0));
        }
    }
}

/// Reads a stream to its end, keeping at most STREAM_READ_CAP bytes (beyond that the rest is refused with
/// STOP_SENDING: the pipeline only needs to see that it is too large). None if the stream failed.
async fn read_capped(mut recv: quinn::RecvStream) -> Option<Vec<u8>> {
    let mut buf = Vec::with_capacity(1 + 1232);
    loop {
        match recv.read_chunk(STREAM_READ_CAP - buf.len(), true).await {
            Ok(Some(chunk)) => {
                buf.extend_from_slice(&chunk.bytes);
                if buf.len() >= STREAM_READ_CAP {
                    let _ = recv.stop(VarInt::from_u32(0));
                    return Some(buf);
                }
            }
            Ok(None) => return Some(buf),
            Err(_) => return None,
        }
    }
}
