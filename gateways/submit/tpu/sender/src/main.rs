//! meridian-tpu-sender: the `tpu` route's QUIC side. Node decides everything (which leaders, when, which
//! transaction to whom); this process runs Agave's own client machinery for it — `solana-tpu-client-next`'s
//! per-peer `ConnectionWorker`s behind its `WorkersCache` (QUIC endpoint, ALPN `solana-tpu`, client
//! certificate from the identity, one uni stream per transaction, reconnects, blockhash-age drop) — and
//! reports back what became of each hand-over and each peer's counters.
//!
//! The crate's own `ConnectionWorkersScheduler` would take the leaders from a `LeaderUpdater` and hide which
//! transaction went where; its loop is ~40 lines, so this file is that loop with the targets given per
//! transaction by Node, and one `SendTransactionStats` per peer instead of one for all (so the stats are
//! per leader).
//!
//! Wire (stdin from Node, stdout to Node): frames `u32 LE length ‖ u8 kind ‖ body`.
//!   Node → sender
//!     0x01 CONNECT  u8 n ‖ n × addr              keep workers (connections) to these peers: pre-connect
//!     0x02 TX       u32 id ‖ u8 n ‖ n × addr ‖ tx  hand `tx` to the workers of these peers
//!     addr = u8 len ‖ "ip:port" (ASCII)
//!   sender → Node
//!     0x81 HELLO    JSON {"identity": base58, "ephemeral": bool}
//!     0x82 RESULT   u32 id ‖ u8 n ‖ n × u8 code    per target, in the TX frame's order (codes below)
//!     0x83 STATS    JSON [{"peer": "ip:port", "active": bool, counters since the last STATS…}]
//!     0x84 ERROR    UTF-8 line (a bad frame, an unusable address): Node logs it
//!
//! Consecutive TX frames with the same targets that are already waiting on stdin go to the workers as one
//! batch (up to MAX_BATCH), as the crate's callers do; at low load every batch is one transaction.

use {
    solana_keypair::Keypair,
    solana_signer::Signer,
    solana_tpu_client_next::{
        connection_workers_scheduler::{setup_endpoint, BindTarget, StakeIdentity},
        transaction_batch::TransactionBatch,
        workers_cache::{shutdown_worker, WorkersCache, WorkersCacheError},
        SendTransactionStats,
    },
    std::{
        collections::HashMap,
        net::SocketAddr,
        num::NonZeroUsize,
        sync::Arc,
        time::Duration,
    },
    tokio::{
        io::{AsyncReadExt, AsyncWriteExt, BufReader},
        sync::mpsc,
    },
    tokio_util::sync::CancellationToken,
};

const KIND_CONNECT: u8 = 0x01;
const KIND_TX: u8 = 0x02;
const KIND_HELLO: u8 = 0x81;
const KIND_RESULT: u8 = 0x82;
const KIND_STATS: u8 = 0x83;
const KIND_ERROR: u8 = 0x84;

/// RESULT codes.
const QUEUED: u8 = 0;
/// The peer's worker queue is full: dropped for this peer (the non-blocking broadcaster's rule).
const FULL: u8 = 1;
/// The peer's worker has stopped (connection failed past its reconnect attempts): dropped; a new worker is
/// started on the next CONNECT or TX naming the peer.
const GONE: u8 = 2;
const BAD_ADDR: u8 = 3;

const MAX_FRAME: usize = 64 * 1024;
const MAX_BATCH: usize = 64;
/// The crate's own handshake timeout (`DEFAULT_MAX_CONNECTION_HANDSHAKE_TIMEOUT`, crate-private).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(2);

struct Opts {
    identity: Option<String>,
    bind: SocketAddr,
    max_connections: usize,
    worker_channel: usize,
    reconnects: usize,
    stats_ms: u64,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts { identity: None, bind: "0.0.0.0:0".parse().unwrap(), max_connections: 64, worker_channel: 64, reconnects: 2, stats_ms: 1000 };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{a}: value missing"));
        match a.as_str() {
            "--identity" => o.identity = Some(v()?),
            "--bind" => o.bind = v()?.parse().map_err(|_| "--bind: expected ip:port".to_string())?,
            "--max-connections" => o.max_connections = v()?.parse().map_err(|_| "--max-connections: expected a number".to_string())?,
            "--worker-channel" => o.worker_channel = v()?.parse().map_err(|_| "--worker-channel: expected a number".to_string())?,
            "--reconnects" => o.reconnects = v()?.parse().map_err(|_| "--reconnects: expected a number".to_string())?,
            "--stats-ms" => o.stats_ms = v()?.parse().map_err(|_| "--stats-ms: expected a number".to_string())?,
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if o.max_connections == 0 || o.worker_channel == 0 || o.stats_ms == 0 {
        return Err("--max-connections, --worker-channel and --stats-ms must be > 0".into());
    }
    Ok(o)
}

/// A keypair file as the Solana CLI writes it: a JSON array of 64 bytes (secret ‖ public).
fn read_keypair(path: &str) -> Result<Keypair, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("identity file: {e}"))?;
    let bytes: Vec<u8> = text
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|s| s.trim().parse::<u8>())
        .collect::<Result<_, _>>()
        .map_err(|_| "identity file: expected a JSON array of 64 bytes (solana-keygen format)".to_string())?;
    Keypair::try_from(bytes.as_slice()).map_err(|_| "identity file: expected a JSON array of 64 bytes (solana-keygen format)".to_string())
}

fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(5 + body.len());
    f.extend_from_slice(&((body.len() + 1) as u32).to_le_bytes());
    f.push(kind);
    f.extend_from_slice(body);
    f
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// One parsed frame from Node.
enum Cmd {
    Connect(Vec<Result<SocketAddr, String>>),
    Tx { id: u32, targets: Vec<Result<SocketAddr, String>>, tx: Vec<u8> },
}

fn parse_addrs(b: &[u8], mut at: usize) -> Option<(Vec<Result<SocketAddr, String>>, usize)> {
    let n = *b.get(at)? as usize;
    at += 1;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = *b.get(at)? as usize;
        at += 1;
        let s = std::str::from_utf8(b.get(at..at + len)?).ok()?;
        at += len;
        out.push(s.parse::<SocketAddr>().map_err(|_| s.to_string()));
    }
    Some((out, at))
}

fn parse_cmd(kind: u8, b: &[u8]) -> Option<Cmd> {
    match kind {
        KIND_CONNECT => parse_addrs(b, 0).map(|(a, _)| Cmd::Connect(a)),
        KIND_TX => {
            let id = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?);
            let (targets, at) = parse_addrs(b, 4)?;
            Some(Cmd::Tx { id, targets, tx: b[at..].to_vec() })
        }
        _ => None,
    }
}

struct Sender {
    workers: WorkersCache,
    endpoint: quinn::Endpoint,
    stats: HashMap<SocketAddr, Arc<SendTransactionStats>>,
    opts: Opts,
}

impl Sender {
    fn ensure(&mut self, peer: SocketAddr) {
        let stats = self.stats.entry(peer).or_default().clone();
        if let Some(evicted) = self.workers.ensure_worker(peer, &self.endpoint, self.opts.worker_channel, false, self.opts.reconnects, HANDSHAKE_TIMEOUT, stats) {
            shutdown_worker(evicted);
        }
    }

    fn dispatch(&mut self, targets: &[Result<SocketAddr, String>], batch: TransactionBatch) -> Vec<u8> {
        targets
            .iter()
            .map(|t| match t {
                Err(_) => BAD_ADDR,
                Ok(peer) => {
                    self.ensure(*peer);
                    match self.workers.try_send_transactions_to_address(peer, batch.clone()) {
                        Ok(()) => QUEUED,
                        Err(WorkersCacheError::FullChannel) => FULL,
                        Err(WorkersCacheError::ReceiverDropped) => {
                            if let Some(w) = self.workers.pop(*peer) {
                                shutdown_worker(w);
                            }
                            GONE
                        }
                        Err(_) => GONE,
                    }
                }
            })
            .collect()
    }

    /// Counters since the last report, per peer; peers no longer cached and with nothing to report are forgotten
    /// (the map stays bounded by the cache size plus the peers of one interval).
    fn stats_json(&mut self) -> Option<String> {
        let mut parts = Vec::new();
        let workers = &self.workers;
        self.stats.retain(|peer, s| {
            let v = s.read_and_reset();
            let active = workers.contains(peer);
            let any = v.successfully_sent
                + v.connect_error_cids_exhausted
                + v.connect_error_invalid_remote_address
                + v.connect_error_other
                + v.connection_error_application_closed
                + v.connection_error_cids_exhausted
                + v.connection_error_connection_closed
                + v.connection_error_locally_closed
                + v.connection_error_reset
                + v.connection_error_timed_out
                + v.connection_error_transport_error
                + v.connection_error_version_mismatch
                + v.write_error_closed_stream
                + v.write_error_connection_lost
                + v.write_error_stopped
                + v.write_error_zero_rtt_rejected;
            parts.push(format!(
                "{{\"peer\":{},\"active\":{active},\"sent\":{},\"connect_error\":{},\"connection_timed_out\":{},\"connection_closed\":{},\"application_closed\":{},\"connection_reset\":{},\"transport_error\":{},\"write_error\":{},\"congestion_events\":{}}}",
                json_str(&peer.to_string()),
                v.successfully_sent,
                v.connect_error_cids_exhausted + v.connect_error_invalid_remote_address + v.connect_error_other,
                v.connection_error_timed_out,
                v.connection_error_connection_closed + v.connection_error_locally_closed + v.connection_error_cids_exhausted + v.connection_error_version_mismatch,
                v.connection_error_application_closed,
                v.connection_error_reset,
                v.connection_error_transport_error,
                v.write_error_closed_stream + v.write_error_connection_lost + v.write_error_stopped + v.write_error_zero_rtt_rejected,
                v.transport_congestion_events,
            ));
            active || any > 0
        });
        if parts.is_empty() {
            None
        } else {
            Some(format!("[{}]", parts.join(",")))
        }
    }
}

async fn read_frame<R: AsyncReadExt + Unpin>(r: &mut R) -> std::io::Result<Option<(u8, Vec<u8>)>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("frame length {len}")));
    }
    let mut b = vec![0u8; len];
    r.read_exact(&mut b).await?;
    let kind = b[0];
    b.remove(0);
    Ok(Some((kind, b)))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("meridian-tpu-sender: {e}");
            std::process::exit(2);
        }
    };
    let (identity, ephemeral) = match &opts.identity {
        Some(p) => match read_keypair(p) {
            Ok(k) => (k, false),
            Err(e) => {
                eprintln!("meridian-tpu-sender: {e}");
                std::process::exit(2);
            }
        },
        None => (Keypair::new(), true),
    };
    let endpoint = match setup_endpoint(BindTarget::Address(opts.bind), Some(StakeIdentity::new(&identity)), None) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("meridian-tpu-sender: cannot open the QUIC endpoint: {e}");
            std::process::exit(1);
        }
    };
    let cancel = CancellationToken::new();
    let workers = WorkersCache::new(NonZeroUsize::new(opts.max_connections).unwrap(), cancel.clone());
    let stats_every = Duration::from_millis(opts.stats_ms);
    let mut sender = Sender { workers, endpoint, stats: HashMap::new(), opts };

    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(first) = out_rx.recv().await {
            let mut buf = first;
            while let Ok(more) = out_rx.try_recv() {
                buf.extend_from_slice(&more);
                if buf.len() > 256 * 1024 {
                    break;
                }
            }
            if stdout.write_all(&buf).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let hello = format!("{{\"identity\":{},\"ephemeral\":{ephemeral}}}", json_str(&identity.pubkey().to_string()));
    let _ = out_tx.send(frame(KIND_HELLO, hello.as_bytes()));

    // Frames are read by their own task so that a burst waiting on stdin can be coalesced into batches.
    let (cmd_tx, mut cmd_rx) = mpsc::channel::<Cmd>(4096);
    let err_out = out_tx.clone();
    let reader = tokio::spawn(async move {
        let mut stdin = BufReader::with_capacity(256 * 1024, tokio::io::stdin());
        loop {
            match read_frame(&mut stdin).await {
                Ok(Some((kind, body))) => match parse_cmd(kind, &body) {
                    Some(c) => {
                        if cmd_tx.send(c).await.is_err() {
                            break;
                        }
                    }
                    None => {
                        let _ = err_out.send(frame(KIND_ERROR, format!("bad frame of kind {kind:#04x} ({} bytes)", body.len()).as_bytes()));
                    }
                },
                Ok(None) => break,
                Err(e) => {
                    let _ = err_out.send(frame(KIND_ERROR, format!("stdin: {e}").as_bytes()));
                    break;
                }
            }
        }
    });

    let mut tick = tokio::time::interval(stats_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pending: Option<Cmd> = None;
    loop {
        let cmd = match pending.take() {
            Some(c) => c,
            None => tokio::select! {
                c = cmd_rx.recv() => match c { Some(c) => c, None => break },
                _ = tick.tick() => {
                    if let Some(j) = sender.stats_json() {
                        let _ = out_tx.send(frame(KIND_STATS, j.as_bytes()));
                    }
                    continue;
                }
            },
        };
        match cmd {
            Cmd::Connect(peers) => {
                for p in peers {
                    match p {
                        Ok(a) => sender.ensure(a),
                        Err(s) => {
                            let _ = out_tx.send(frame(KIND_ERROR, format!("CONNECT: not an ip:port: {s:?}").as_bytes()));
                        }
                    }
                }
            }
            Cmd::Tx { id, targets, tx } => {
                let mut ids = vec![id];
                let mut txs = vec![tx];
                while txs.len() < MAX_BATCH {
                    match cmd_rx.try_recv() {
                        Ok(Cmd::Tx { id, targets: t2, tx }) if t2 == targets => {
                            ids.push(id);
                            txs.push(tx);
                        }
                        Ok(other) => {
                            pending = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let codes = sender.dispatch(&targets, TransactionBatch::new(txs));
                let mut out = Vec::with_capacity(ids.len() * (10 + codes.len()));
                for id in ids {
                    let mut body = Vec::with_capacity(5 + codes.len());
                    body.extend_from_slice(&id.to_le_bytes());
                    body.push(codes.len() as u8);
                    body.extend_from_slice(&codes);
                    out.extend_from_slice(&frame(KIND_RESULT, &body));
                }
                let _ = out_tx.send(out);
            }
        }
    }
    // stdin closed: Node is stopping us. Let the workers finish what they hold, then report the last counters.
    reader.abort();
    sender.workers.shutdown().await;
    if let Some(j) = sender.stats_json() {
        let _ = out_tx.send(frame(KIND_STATS, j.as_bytes()));
    }
    sender.endpoint.close(0u32.into(), b"sender stopping");
    drop(out_tx);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
}
