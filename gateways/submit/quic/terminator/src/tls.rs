//! TLS for the QUIC listener: a self-signed Ed25519 server certificate made at start (the SDK does not verify
//! it), ALPN `falcon-tx`, TLS 1.3 only, and a client certificate that is required but judged only for
//! possession: any self-signed Ed25519 certificate is accepted here, and Node reads its subject CN (the API
//! key) and decides. Session resumption is on (the SDK reconnects after every failed send).

use rustls::{
    client::danger::HandshakeSignatureValid,
    crypto::{verify_tls13_signature, WebPkiSupportedAlgorithms},
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime},
    server::danger::{ClientCertVerified, ClientCertVerifier},
    DigitallySignedStruct, DistinguishedName, Error, SignatureScheme,
};
use std::sync::Arc;

pub const ALPN: &[u8] = b"falcon-tx";

#[derive(Debug)]
struct AnySelfSignedEd25519 {
    algs: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnySelfSignedEd25519 {
    fn offer_client_auth(&self) -> bool {
        true
    }
    fn client_auth_mandatory(&self) -> bool {
        true
    }
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }
    fn verify_client_cert(&self, _: &CertificateDer<'_>, _: &[CertificateDer<'_>], _: UnixTime) -> Result<ClientCertVerified, Error> {
        // No chain to check: the key is self-asserted, proof of possession is the CertificateVerify below.
        Ok(ClientCertVerified::assertion())
    }
    fn verify_tls12_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, Error> {
        Err(Error::General("TLS 1.2 is not offered".into()))
    }
    fn verify_tls13_signature(&self, msg: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, Error> {
        if dss.scheme != SignatureScheme::ED25519 {
            return Err(Error::General("client certificate must be Ed25519".into()));
        }
        verify_tls13_signature(msg, cert, dss, &self.algs)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        vec![SignatureScheme::ED25519]
    }
}

pub fn server_tls() -> Result<rustls::ServerConfig, Box<dyn std::error::Error>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519)?;
    let cert = rcgen::CertificateParams::new(vec!["falcon".to_string()])?.self_signed(&key)?;
    let verifier = Arc::new(AnySelfSignedEd25519 { algs: provider.signature_verification_algorithms });
    let mut tls = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.session_storage = rustls::server::ServerSessionMemoryCache::new(16_384);
    Ok(tls)
}

/// Certificates above this are not passed on (the SDK's is ~300 bytes); the connection is then refused by Node
/// as having no key, and the bridge frame stays small.
const MAX_CERT_BYTES: usize = 8 * 1024;

/// The client's end-entity certificate (DER) after the handshake.
pub fn peer_cert(conn: &quinn::Connection) -> Option<Vec<u8>> {
    let any = conn.peer_identity()?;
    let certs = any.downcast::<Vec<CertificateDer<'static>>>().ok()?;
    certs.first().filter(|c| c.len() <= MAX_CERT_BYTES).map(|c| c.to_vec())
}
