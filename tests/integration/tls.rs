//! TLS from outside: the client with feature `rustls` (on in the tests' builds) calling an agent
//! over https on loopback, served with rustls and a certificate of a test CA
//! (`tests/data/tls/`). An agent whose certificate the client does not trust is refused
//! before any request is sent, as a connect error; with the CA trusted, the agent's typed
//! errors come back over TLS as over plain HTTP.

use std::sync::Arc;
use std::time::Duration;

use a2a_error::client::ClientError;
use a2a_error::resilience::RetryPolicy;
use a2a_error::{A2aError, Client, RemoteError};
use axum::Router;
use serde_json::{Value, json};
use tokio_rustls::rustls;
use tower::ServiceExt;

use crate::common::agent::TestAgent;

fn data(file: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/tls/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// Serves `router` over TLS (HTTP/1.1) on a fresh 127.0.0.1 port; returns
/// `https://localhost:PORT`, the name its certificate holds. Also returns how many
/// requests reached the router.
async fn serve_tls(router: Router) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = vec![CertificateDer::from_pem_slice(&data("server.pem")).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(&data("server.key")).unwrap();
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = served.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let (acceptor, router, counted) = (acceptor.clone(), router.clone(), counted.clone());
            tokio::spawn(async move {
                // A client that does not trust the certificate ends the handshake here.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    router.clone().oneshot(request.map(axum::body::Body::new))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (format!("https://localhost:{port}"), served)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_over_https_is_trusted_only_through_its_ca() {
    let (url, served) = serve_tls(TestAgent::new().router()).await;

    // GetTask through a client without retries, on `http` if given (else the default).
    let get_task = |http: Option<reqwest::Client>| {
        let mut builder = Client::<RemoteError>::jsonrpc(format!("{url}/"))
            .retry(RetryPolicy::none())
            .total_timeout(Duration::from_secs(10));
        if let Some(http) = http {
            builder = builder.http_client(http);
        }
        let client = builder.build().unwrap();
        async move {
            let params = json!({"id": "no-such-task"});
            let reply = client.call::<_, Value>("GetTask", &params).await;
            reply.unwrap_err()
        }
    };

    // The default client trusts the platform's roots, which do not hold the test CA: the
    // handshake fails, nothing is sent, and the error says it could not connect.
    let error = get_task(None).await;
    assert!(matches!(error, ClientError::Connect(_)), "{error:?}");
    // The text names the cause (`invalid peer certificate: UnknownIssuer`).
    assert!(error.to_string().contains("certificate"), "{error}");
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 0);

    // With the CA trusted (the caller's own reqwest client), the agent's typed error comes
    // back over TLS: decoded, its code intact.
    let ca = reqwest::Certificate::from_pem(&data("ca.pem")).unwrap();
    let http = reqwest::Client::builder().tls_certs_only([ca]).build();
    let error = get_task(Some(http.unwrap())).await;
    let ClientError::Remote { error, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(error.code(), a2a_error::code::TASK_NOT_FOUND, "{error:?}");
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
}
