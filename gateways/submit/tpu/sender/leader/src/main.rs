//! meridian-tpu-leader: one leader's TPU for tests and the bench — Agave's published QUIC server
//! (`solana-streamer` 4.2.2, `spawn_stake_weighted_qos_server`, the stake-weighted QoS server a validator runs)
//! on the given address, with the given identity as its certificate. It enforces the protocol by itself (ALPN
//! `solana-tpu`, a client certificate, uni streams only, at most `max_stream_data_bytes` a stream).
//!
//! Args: --bind ip:port --seed <64 hex: the identity's 32-byte secret> [--stake <base58 pubkey>=<lamports>]…
//! stdout, one line each:
//!   `listening <ip:port> <identity base58>` once, when the server is up
//!   `packet <ip:port of the sender> <hex of the packet's bytes>` for every packet it hands to its consumer
//! stdin closed = stop (the process exits; the owning test or chain never leaves it behind).

use {
    solana_keypair::Keypair,
    solana_pubkey::Pubkey,
    solana_signer::Signer,
    solana_streamer::{
        nonblocking::swqos::SwQosConfig,
        quic::{spawn_stake_weighted_qos_server, QuicStreamerConfig},
        streamer::StakedNodes,
    },
    std::{
        collections::HashMap,
        io::{Read, Write},
        net::{SocketAddr, UdpSocket},
        num::NonZeroUsize,
        str::FromStr,
        sync::{Arc, RwLock},
    },
    tokio_util::sync::CancellationToken,
};

/// What a v1 transaction may need (SIMD-0385); the crate's default is 1,232 (PACKET_DATA_SIZE).
const MAX_STREAM_BYTES: u32 = 4096;

fn fail(msg: String) -> ! {
    eprintln!("meridian-tpu-leader: {msg}");
    std::process::exit(2);
}

fn hex(b: &[u8], out: &mut String) {
    const H: &[u8; 16] = b"0123456789abcdef";
    for x in b {
        out.push(H[(x >> 4) as usize] as char);
        out.push(H[(x & 15) as usize] as char);
    }
}

fn main() {
    let mut bind: Option<SocketAddr> = None;
    let mut seed: Option<[u8; 32]> = None;
    let mut stakes: HashMap<Pubkey, u64> = HashMap::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let v = it.next().unwrap_or_else(|| fail(format!("{a}: value missing")));
        match a.as_str() {
            "--bind" => bind = Some(v.parse().unwrap_or_else(|_| fail("--bind: expected ip:port".into()))),
            "--seed" => {
                if v.len() != 64 {
                    fail("--seed: expected 64 hex digits".into());
                }
                let mut s = [0u8; 32];
                for (i, b) in s.iter_mut().enumerate() {
                    *b = u8::from_str_radix(&v[i * 2..i * 2 + 2], 16).unwrap_or_else(|_| fail("--seed: expected 64 hex digits".into()));
                }
                seed = Some(s);
            }
            "--stake" => {
                let (k, l) = v.split_once('=').unwrap_or_else(|| fail("--stake: expected <pubkey>=<lamports>".into()));
                let k = Pubkey::from_str(k).unwrap_or_else(|_| fail("--stake: bad pubkey".into()));
                let l = l.parse::<u64>().unwrap_or_else(|_| fail("--stake: bad lamports".into()));
                stakes.insert(k, l);
            }
            _ => fail(format!("unknown argument {a}")),
        }
    }
    let bind = bind.unwrap_or_else(|| fail("--bind is required".into()));
    let keypair = Keypair::new_from_array(seed.unwrap_or_else(|| fail("--seed is required".into())));
    let socket = UdpSocket::bind(bind).unwrap_or_else(|e| fail(format!("cannot bind {bind}: {e}")));
    let local = socket.local_addr().unwrap();
    let (packet_tx, packet_rx) = crossbeam_channel::unbounded();
    let staked = Arc::new(RwLock::new(StakedNodes::new(Arc::new(stakes), HashMap::new())));
    let params = QuicStreamerConfig {
        num_threads: NonZeroUsize::new(1).unwrap(),
        stream_receive_window_size: MAX_STREAM_BYTES,
        max_stream_data_bytes: MAX_STREAM_BYTES,
        ..QuicStreamerConfig::default()
    };
    let cancel = CancellationToken::new();
    let server = spawn_stake_weighted_qos_server("mTpuLeader", "meridian_tpu_leader", [socket.into()], &keypair, packet_tx, staked, params, SwQosConfig::default(), cancel.clone())
        .unwrap_or_else(|e| fail(format!("cannot start the QUIC server: {e:?}")));
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening {local} {}", keypair.pubkey());
        let _ = out.flush();
    }
    // stdin closed (the owner went away or closed it): stop.
    std::thread::spawn(move || {
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        cancel.cancel();
        std::process::exit(0);
    });
    let mut line = String::with_capacity(8192);
    while let Ok(batch) = packet_rx.recv() {
        let mut out = std::io::stdout().lock();
        for p in batch.iter() {
            if p.meta().discard() {
                continue;
            }
            let Some(data) = p.data(..) else { continue };
            line.clear();
            line.push_str("packet ");
            line.push_str(&SocketAddr::new(p.meta().addr, p.meta().port).to_string());
            line.push(' ');
            hex(data, &mut line);
            line.push('\n');
            if out.write_all(line.as_bytes()).is_err() {
                std::process::exit(0);
            }
        }
        let _ = out.flush();
    }
    let _ = server.thread.join();
}
