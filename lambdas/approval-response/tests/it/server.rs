//! A minimal HTTP/1.1 server around the handler for the browser test: one
//! request per connection (`Connection: close`), Content-Length bodies only.
//! The Function URL adapter does the same translation in AWS.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use live_ci_approval_response::{PageRequest, PageResponse};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves `handle` on `listener` until the returned task is aborted.
pub(crate) fn serve<F, Fut>(listener: TcpListener, handle: F) -> tokio::task::JoinHandle<()>
where
    F: Fn(PageRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = PageResponse> + Send + 'static,
{
    let handle = Arc::new(handle);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let handle = Arc::clone(&handle);
            tokio::spawn(async move {
                let _ = connection(stream, handle.as_ref()).await;
            });
        }
    })
}

async fn connection<F, Fut>(mut stream: TcpStream, handle: &F) -> std::io::Result<()>
where
    F: Fn(PageRequest) -> Fut,
    Fut: Future<Output = PageResponse>,
{
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 64 * 1024 {
            return Ok(());
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_string();
    let target = request_line.next().unwrap_or("/").to_string();
    let mut req = PageRequest {
        method,
        query: target
            .split_once('?')
            .map(|(_, q)| q.to_string())
            .unwrap_or_default(),
        ..Default::default()
    };
    for line in lines.filter(|l| !l.is_empty()) {
        if let Some((k, v)) = line.split_once(':') {
            req.headers
                .insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let length: usize = req
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    req.body = body;
    let resp = if target.starts_with("/favicon") {
        PageResponse {
            status: 404,
            headers: vec![],
            body: String::new(),
        }
    } else {
        handle(req).await
    };
    let mut out = format!("HTTP/1.1 {} X\r\n", resp.status);
    for (k, v) in &resp.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        resp.body.len()
    ));
    stream.write_all(out.as_bytes()).await?;
    stream.write_all(resp.body.as_bytes()).await?;
    stream.shutdown().await
}

/// A listener on a free loopback port, and its address.
pub(crate) async fn listen() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    (listener, addr)
}
