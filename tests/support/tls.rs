//! A throwaway certificate authority and what a TLS listener answers, for
//! the mTLS tests.

use super::*;

/// A throwaway certificate authority for mTLS tests.
pub struct TestCa {
    /// The CA certificate (PEM).
    pub pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl TestCa {
    /// A new self-signed CA.
    pub fn new() -> TestCa {
        let key = rcgen::KeyPair::generate().expect("CA key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let pem = params.self_signed(&key).expect("CA certificate").pem();
        TestCa {
            pem,
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A certificate for `name` (a DNS name or an IP address) and its key, PEM.
    pub fn issue(&self, name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec![name.to_string()])
            .expect("params")
            .signed_by(&key, &self.issuer)
            .expect("certificate");
        (cert.pem(), key.serialize_pem())
    }
}

impl TestCa {
    /// A certificate for `name` valid only from `not_before` to `not_after`
    /// (year, month, day; midnight UTC) and its key, PEM: with `not_after` in
    /// the past, an expired certificate from a trusted CA.
    pub fn issue_with(
        &self,
        name: &str,
        not_before: (i32, u8, u8),
        not_after: (i32, u8, u8),
    ) -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).expect("params");
        params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        let cert = params.signed_by(&key, &self.issuer).expect("certificate");
        (cert.pem(), key.serialize_pem())
    }
}

/// The counterpart of [`tls_refusal`] for a client the server must serve:
/// completes the handshake as `server_name`, trusting `ca_pem` and presenting
/// `identity` if given, sends an HTTP/2 preface and returns how many bytes the
/// server answered with (its SETTINGS); the client's error chain otherwise.
pub fn tls_answer(
    addr: &str,
    server_name: &str,
    ca_pem: &str,
    identity: Option<(&str, &str)>,
) -> Result<usize, String> {
    use std::io::{Read, Write};

    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject};

    quiver_upstream::install_crypto_provider();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("CA PEM"))
        .expect("a usable CA");
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(cert.as_bytes()).expect("cert PEM")],
                PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key PEM"),
            )
            .expect("a client identity"),
        None => builder.with_no_client_auth(),
    };
    let name = ServerName::try_from(server_name.to_string()).expect("a server name");
    let connection =
        rustls::ClientConnection::new(std::sync::Arc::new(config), name).expect("a TLS client");
    let socket = std::net::TcpStream::connect(addr).expect("TCP connect");
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("read timeout");
    let mut tls = rustls::StreamOwned::new(connection, socket);
    tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .and_then(|()| tls.flush())
        .map_err(|e| error_chain(&e))?;
    let mut buffer = [0u8; 64];
    match tls.read(&mut buffer) {
        Ok(0) => Err("the server closed the connection without answering".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(error_chain(&e)),
    }
}
