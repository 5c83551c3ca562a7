//! Reading a client's request body: whole, within [`Options::max_request_bytes`] and
//! [`Options::body_timeout`], and, when it cannot be read, an answer that says why.
//!
//! Three things can go wrong, and each has its own answer: a body over the limit (413,
//! at once when its declared length says so), a body that does not arrive in time (408),
//! and a body that is not a body: chunked encoding that breaks its rules, or a body that
//! ends before its declared length (400). Only the first is about size.
//!
//! [`Options::max_request_bytes`]: super::Options::max_request_bytes
//! [`Options::body_timeout`]: super::Options::body_timeout

use super::ApiError;
use axum::body::{Body, Bytes, HttpBody};
use std::io;
use std::time::Duration;

/// The whole body, or the answer for a body that is too large, too slow or malformed.
pub(crate) async fn read(body: Body, limit: usize, wait: Duration) -> Result<Bytes, ApiError> {
    tokio::time::timeout(wait, read_within(body, limit))
        .await
        .map_err(|_| ApiError::body_timeout(wait))?
}

async fn read_within(mut body: Body, limit: usize) -> Result<Bytes, ApiError> {
    // A declared length (`Content-Length`) is known before any byte is read.
    let declared = body.size_hint().lower();
    if declared > limit as u64 {
        return Err(ApiError::too_large(limit));
    }
    // `declared` is at most `limit` here, so it fits.
    let mut bytes = Vec::with_capacity(usize::try_from(declared).unwrap_or(limit));
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        let frame = frame.map_err(unreadable)?;
        // Trailers carry no body bytes.
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.len() > limit - bytes.len() {
            return Err(ApiError::too_large(limit));
        }
        bytes.extend_from_slice(&data);
    }
    Ok(Bytes::from(bytes))
}

/// The answer for a body the connection could not deliver. hyper says what broke in an
/// I/O error at the end of its error's sources: `InvalidInput` or `InvalidData` when the
/// chunked encoding breaks its rules (a size line that is not hexadecimal, a size that
/// overflows, a chunk not followed by its line end), `UnexpectedEof` when the client
/// stopped sending before the body was whole.
fn unreadable(error: axum::Error) -> ApiError {
    let inner = error.into_inner();
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&*inner);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            return match io.kind() {
                io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => {
                    ApiError::bad_request(format!(
                        "The request body's chunked encoding is malformed ({io}): send each \
                         chunk as its size in hexadecimal, CRLF, its bytes, CRLF, and end with \
                         a chunk of size 0"
                    ))
                }
                io::ErrorKind::UnexpectedEof => ApiError::bad_request(format!(
                    "The request body ended before it was whole ({io}): send as many bytes \
                     as Content-Length says, or the chunked encoding's last chunk"
                )),
                _ => ApiError::bad_request(format!("The request body could not be read: {io}")),
            };
        }
        source = cause.source();
    }
    ApiError::bad_request(format!("The request body could not be read: {inner}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    fn stream(pieces: Vec<Result<&'static [u8], io::Error>>) -> Body {
        Body::from_stream(futures::stream::iter(
            pieces.into_iter().map(|p| p.map(Bytes::from_static)),
        ))
    }

    #[tokio::test]
    async fn only_a_body_over_the_limit_is_too_large() {
        let wait = Duration::from_secs(5);
        let whole = read(stream(vec![Ok(b"1234"), Ok(b"5678")]), 8, wait).await;
        assert_eq!(whole.unwrap(), Bytes::from_static(b"12345678"));
        let over = read(stream(vec![Ok(b"1234"), Ok(b"56789")]), 8, wait).await;
        assert_eq!(over.unwrap_err().status(), StatusCode::PAYLOAD_TOO_LARGE);
        let declared = read(Body::from(vec![b'x'; 9]), 8, wait).await;
        assert_eq!(
            declared.unwrap_err().status(),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        let malformed = io::Error::new(io::ErrorKind::InvalidInput, "Invalid chunk size line");
        let error = read(stream(vec![Ok(b"12"), Err(malformed)]), 8, wait)
            .await
            .unwrap_err();
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        assert!(
            error.message().starts_with(
                "The request body's chunked encoding is malformed (Invalid chunk size line)"
            ),
            "{}",
            error.message()
        );
        let cut = io::Error::new(io::ErrorKind::UnexpectedEof, "early end");
        let error = read(stream(vec![Err(cut)]), 8, wait).await.unwrap_err();
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        assert!(error.message().contains("ended before it was whole"));
    }
}
