//! Test and bench client for the QUIC submission listener.
//!
//! `sdk ...` commands go through the published SDK (`falcon-client`), unchanged: its certificate, ALPN, SNI,
//! framing, retry-after-reconnect and datagram checks are exactly what users run. `raw ...` commands use a
//! quinn connection configured like the SDK's, for what the SDK hides: the raw 2-byte answer (no retry), the
//! older uni-stream form, the server's close code and reason, and paced datagram floods for the bench.
//!
//! One command per stdin line, one answer line on stdout (`ok ...` or `err ...`). Transactions are hex.

use bytes::Bytes;
use falcon_client::{FalconClient, SubmitError, TransportMode};
use quinn::{crypto::rustls::QuicClientConfig, ClientConfig, Connection, Endpoint, IdleTimeout, TransportConfig, VarInt};
use rustls::{
    client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider},
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime},
    DigitallySignedStruct, NamedGroup, SignatureScheme,
};
use std::{sync::Arc, time::{Duration, Instant}};
use tokio::io::{AsyncBufReadExt, BufReader};
use uuid::Uuid;

fn hex(s: &str) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 {
        return Err("odd hex length".into());
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| e.to_string())).collect()
}

fn submit_code(e: &anyhow::Error) -> Option<u8> {
    e.chain().find_map(|c| c.downcast_ref::<SubmitError>()).map(|s| match s {
        SubmitError::RateLimited => 0x01,
        SubmitError::Unsigned => 0x02,
        SubmitError::MissingTip => 0x03,
        SubmitError::DeserializeFailed => 0x04,
        SubmitError::TooLarge => 0x05,
        SubmitError::ForwardFailed => 0x06,
        SubmitError::SignatureCountMismatch => 0x07,
        SubmitError::Unknown(c) => *c,
    })
}

// ---- a quinn client set up like the SDK's (see falcon-client's build_client_config) ----

fn provider() -> CryptoProvider {
    let mut p = rustls::crypto::ring::default_provider();
    p.kx_groups.retain(|kx| kx.name() == NamedGroup::X25519);
    p
}

#[derive(Debug)]
struct SkipServerVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for SkipServerVerification {
    fn verify_server_cert(&self, _: &CertificateDer<'_>, _: &[CertificateDer<'_>], _: &ServerName<'_>, _: &[u8], _: UnixTime) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `cn` is the certificate's subject CN; `alg_ecdsa` makes a P-256 certificate instead of Ed25519.
fn raw_client_config(cn: &str, alg_ecdsa: bool) -> anyhow::Result<ClientConfig> {
    let key = rcgen::KeyPair::generate_for(if alg_ecdsa { &rcgen::PKCS_ECDSA_P256_SHA256 } else { &rcgen::PKCS_ED25519 })?;
    let mut params = rcgen::CertificateParams::default();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, cn);
    params.distinguished_name = dn;
    let cert = params.self_signed(&key)?;
    let p = Arc::new(provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(p.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(SkipServerVerification(p)))
        .with_client_auth_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )?;
    tls.alpn_protocols = vec![b"falcon-tx".to_vec()];
    let mut t = TransportConfig::default();
    t.keep_alive_interval(Some(Duration::from_secs(10)));
    t.max_idle_timeout(Some(IdleTimeout::try_from(Duration::from_secs(30))?));
    t.initial_mtu(1472);
    t.datagram_receive_buffer_size(Some(65_535));
    t.datagram_send_buffer_size(4 * 1024 * 1024);
    t.max_concurrent_uni_streams(VarInt::from_u32(0));
    t.max_concurrent_bidi_streams(VarInt::from_u32(256));
    let mut cc = ClientConfig::new(Arc::new(QuicClientConfig::try_from(tls)?));
    cc.transport_config(Arc::new(t));
    Ok(cc)
}

async fn raw_connect(addr: &str, cn: &str, ecdsa: bool) -> anyhow::Result<(Endpoint, Connection)> {
    let mut ep = Endpoint::client("127.0.0.1:0".parse()?)?;
    ep.set_default_client_config(raw_client_config(cn, ecdsa)?);
    let conn = tokio::time::timeout(Duration::from_secs(5), ep.connect(addr.parse()?, "falcon")?).await??;
    Ok((ep, conn))
}

/// One stream the SDK way, but returning the server's two bytes (or the failure) without any retry.
async fn raw_stream(conn: &Connection, payload: &[u8]) -> anyhow::Result<[u8; 2]> {
    let (mut send, mut recv) = conn.open_bi().await?;
    send.write_all(&[0x01]).await?;
    send.write_all(payload).await?;
    send.finish()?;
    let mut resp = [0u8; 2];
    recv.read_exact(&mut resp).await?;
    Ok(resp)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// Stream-mode bench through the SDK: every transaction of `file` (u16 LE length-prefixed) once, `inflight`
/// sends at a time on the one connection. Prints count, seconds, ack p50/p99 in ms, errors.
async fn bench_streams(client: Arc<FalconClient>, file: &str, inflight: usize) -> anyhow::Result<String> {
    let data = std::fs::read(file)?;
    let mut txs = Vec::new();
    let mut i = 0;
    while i + 2 <= data.len() {
        let n = u16::from_le_bytes([data[i], data[i + 1]]) as usize;
        txs.push(Bytes::copy_from_slice(&data[i + 2..i + 2 + n]));
        i += 2 + n;
    }
    let txs = Arc::new(txs);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..inflight {
        let (client, txs, next) = (client.clone(), txs.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0usize;
            loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(tx) = txs.get(k) else { break };
                let t0 = Instant::now();
                match client.send_transaction_bytes(tx.clone()).await {
                    Ok(()) => lat.push(t0.elapsed().as_secs_f64() * 1000.0),
                    Err(_) => errors += 1,
                }
            }
            (lat, errors)
        }));
    }
    let mut lat = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await?;
        lat.extend(l);
        errors += e;
    }
    let secs = started.elapsed().as_secs_f64();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Ok(format!("{} {:.4} {:.3} {:.3} {}", lat.len(), secs, pct(&lat, 0.5), pct(&lat, 0.99), errors))
}

struct State {
    sdk: Option<Arc<FalconClient>>,
    mode: TransportMode,
    raw: Option<(Endpoint, Connection)>,
}

async fn command(st: &mut State, line: &str) -> anyhow::Result<String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    match w.as_slice() {
        ["sdk", "connect", addr, key] => {
            st.sdk = Some(Arc::new(FalconClient::connect(addr, Uuid::parse_str(key)?).await?));
            Ok("connected".into())
        }
        ["sdk", "mode", m] => {
            st.mode = if *m == "datagram" { TransportMode::Datagram } else { TransportMode::Stream };
            Ok(m.to_string())
        }
        ["sdk", "timeout", ms] => {
            let c = st.sdk.take().ok_or_else(|| anyhow::anyhow!("not connected"))?;
            let mut c = Arc::try_unwrap(c).map_err(|_| anyhow::anyhow!("client busy"))?;
            c.set_send_timeout(Duration::from_millis(ms.parse()?));
            st.sdk = Some(Arc::new(c));
            Ok("timeout".into())
        }
        ["sdk", "send", tx] => {
            // The SDK's mode is per client; set it for this send (it takes effect with no reconnect).
            let c = st.sdk.take().ok_or_else(|| anyhow::anyhow!("not connected"))?;
            let mut c = Arc::try_unwrap(c).map_err(|_| anyhow::anyhow!("client busy"))?;
            c.set_transport_mode(st.mode);
            let c = Arc::new(c);
            st.sdk = Some(c.clone());
            match c.send_transaction_payload(&hex(tx).map_err(anyhow::Error::msg)?).await {
                Ok(()) => Ok("sent".into()),
                Err(e) => match submit_code(&e) {
                    Some(code) => Ok(format!("rejected {code:#04x}")),
                    None => Err(e),
                },
            }
        }
        ["sdk", "connected"] => Ok(st.sdk.as_ref().map_or(false, |c| c.is_connected()).to_string()),
        ["sdk", "bench", file, inflight] => {
            let c = st.sdk.take().ok_or_else(|| anyhow::anyhow!("not connected"))?;
            let mut c = Arc::try_unwrap(c).map_err(|_| anyhow::anyhow!("client busy"))?;
            c.set_transport_mode(TransportMode::Stream);
            let c = Arc::new(c);
            st.sdk = Some(c.clone());
            bench_streams(c, file, inflight.parse()?).await
        }
        ["sdk", "close"] => {
            if let Some(c) = st.sdk.take() {
                c.close();
            }
            Ok("closed".into())
        }
        ["raw", "connect", addr, cn] | ["raw", "connect", addr, cn, _] => {
            st.raw = Some(raw_connect(addr, cn, w.len() == 5 && w[4] == "ecdsa").await?);
            Ok("connected".into())
        }
        ["raw", "stream", tx] => {
            let (_, conn) = st.raw.as_ref().ok_or_else(|| anyhow::anyhow!("not connected"))?;
            let r = tokio::time::timeout(Duration::from_secs(5), raw_stream(conn, &hex(tx).map_err(anyhow::Error::msg)?)).await??;
            Ok(format!("{:02x}{:02x}", r[0], r[1]))
        }
        ["raw", "streambytes", tx] => {
            // A stream whose whole content is given (no 0x01 added): for malformed framing.
            let (_, conn) = st.raw.as_ref().ok_or_else(|| anyhow::anyhow!("not connected"))?;
            let (mut send, mut recv) = conn.open_bi().await?;
            send.write_all(&hex(tx).map_err(anyhow::Error::msg)?).await?;
            send.finish()?;
            let mut resp = [0u8; 2];
            tokio::time::timeout(Duration::from_secs(5), recv.read_exact(&mut resp)).await??;
            Ok(format!("{:02x}{:02x}", resp[0], resp[1]))
        }
        ["raw", "uni", tx] => {
            let (_, conn) = st.raw.as_ref().ok_or_else(|| anyhow::anyhow!("not connected"))?;
            let mut send = conn.open_uni().await?;
            send.write_all(&hex(tx).map_err(anyhow::Error::msg)?).await?;
            send.finish()?;
            send.stopped().await?;
            Ok("sent".into())
        }
        ["raw", "datagram", tx] => {
            let (_, conn) = st.raw.as_ref().ok_or_else(|| anyhow::anyhow!("not connected"))?;
            conn.send_datagram(Bytes::from(hex(tx).map_err(anyhow::Error::msg)?))?;
            Ok(format!("sent max={}", conn.max_datagram_size().unwrap_or(0)))
        }
        ["raw", "dgflood", n, tx] => {
            // n datagrams of the same bytes as fast as the send buffer drains; prints count and seconds.
            let (_, conn) = st.raw.as_ref().ok_or_else(|| anyhow::anyhow!("not connected"))?;
            let b = Bytes::from(hex(tx).map_err(anyhow::Error::msg)?);
            let n: usize = n.parse()?;
            let t0 = Instant::now();
            for _ in 0..n {
                conn.send_datagram_wait(b.clone()).await?;
            }
            Ok(format!("{} {:.4}", n, t0.elapsed().as_secs_f64()))
        }
        ["raw", "wait-close", ms] => {
            let (_, conn) = st.raw.as_ref().ok_or_else(|| anyhow::anyhow!("not connected"))?;
            match tokio::time::timeout(Duration::from_millis(ms.parse()?), conn.closed()).await {
                Ok(quinn::ConnectionError::ApplicationClosed(c)) => {
                    Ok(format!("app {} {}", c.error_code.into_inner(), String::from_utf8_lossy(&c.reason)))
                }
                Ok(e) => Ok(format!("other {e}")),
                Err(_) => Ok("open".into()),
            }
        }
        ["raw", "close"] => {
            if let Some((ep, conn)) = st.raw.take() {
                conn.close(VarInt::from_u32(0), b"done");
                ep.wait_idle().await;
            }
            Ok("closed".into())
        }
        _ => Err(anyhow::anyhow!("unknown command")),
    }
}

#[tokio::main]
async fn main() {
    let mut st = State { sdk: None, mode: TransportMode::Stream, raw: None };
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let out = match command(&mut st, line.trim()).await {
            Ok(s) => format!("ok {s}"),
            Err(e) => format!("err {}", format!("{e:#}").replace('\n', " ")),
        };
        println!("{out}");
    }
    // stdin closed: leave the way the SDK's close() does, so the server frees the slots at once.
    let _ = command(&mut st, "sdk close").await;
    let _ = tokio::time::timeout(Duration::from_secs(1), command(&mut st, "raw close")).await;
}
