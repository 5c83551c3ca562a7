//! Reading a client's request body: whole, within [`GatewayLimits::max_request_bytes`] and
//! [`GatewayLimits::body_timeout`], and, when it cannot be read, an answer that says why.
//!
//! A body being read holds no place among the requests under way: a client that sends a
//! head and one byte of its body would otherwise hold one until the body time limit, and
//! as many such clients as there are places would have every other request answered 503
//! for that long. What bodies hold instead is bytes, from a [`BodyBudget`] of as many
//! bytes as the requests under way may send together: each piece read takes its bytes
//! from it, and they are given back when the body is given up or, once it is whole, with
//! its request's place, when the answer is over ([`BodyBytes`]). A client that stalls then
//! holds what it sent, and only a crowd that sends that many bytes (512 MiB by default)
//! can make the others wait; bodies being read and requests under way together hold no
//! more than before, `max_concurrent` bodies of the largest size.
//!
//! Three things can go wrong, and each has its own answer: a body over the limit (413,
//! at once when its declared length says so), a body that does not arrive in time (408),
//! and a body that is not a body: chunked encoding that breaks its rules, or a body that
//! ends before its declared length (400). Only the first is about size.
//!
//! [`GatewayLimits::max_request_bytes`]: super::GatewayLimits::max_request_bytes
//! [`GatewayLimits::body_timeout`]: super::GatewayLimits::body_timeout

use super::ApiError;
use axum::body::{Body, Bytes, HttpBody};
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The bytes that the bodies being read may hold together: one permit a byte.
#[derive(Debug)]
pub(crate) struct BodyBudget {
    bytes: Arc<Semaphore>,
    /// For the 503's message: the places the budget is sized for.
    max_concurrent: usize,
}

impl BodyBudget {
    /// As many bytes as `max_concurrent` bodies of `max_request_bytes` each.
    pub(crate) fn new(max_concurrent: usize, max_request_bytes: usize) -> BodyBudget {
        let bytes = max_concurrent
            .saturating_mul(max_request_bytes)
            .min(Semaphore::MAX_PERMITS);
        BodyBudget {
            bytes: Arc::new(Semaphore::new(bytes)),
            max_concurrent,
        }
    }

    /// `count` more bytes for a body that holds `held` already; 503 when the budget has
    /// not that many left.
    fn take(&self, held: &mut Option<OwnedSemaphorePermit>, count: usize) -> Result<(), ApiError> {
        if count == 0 {
            return Ok(());
        }
        let busy = || ApiError::busy_reading(self.max_concurrent);
        let count = u32::try_from(count).map_err(|_| busy())?;
        let more = Arc::clone(&self.bytes)
            .try_acquire_many_owned(count)
            .map_err(|_| busy())?;
        match held {
            Some(permit) => permit.merge(more),
            None => *held = Some(more),
        }
        Ok(())
    }
}

/// The bytes of a [`BodyBudget`] a whole body holds: given back when dropped, which is
/// when its request's answer is over.
#[derive(Debug)]
pub(crate) struct BodyBytes {
    _held: Option<OwnedSemaphorePermit>,
}

/// The whole body and the budget's bytes it holds, or the answer for a body that is too
/// large, too slow or malformed, or that finds `budget` spent (503). The bytes of a body
/// given up are given back at once.
pub(crate) async fn read(
    body: Body,
    limit: usize,
    wait: Duration,
    budget: &BodyBudget,
) -> Result<(Bytes, BodyBytes), ApiError> {
    tokio::time::timeout(wait, read_within(body, limit, budget))
        .await
        .map_err(|_| ApiError::body_timeout(wait))?
}

async fn read_within(
    mut body: Body,
    limit: usize,
    budget: &BodyBudget,
) -> Result<(Bytes, BodyBytes), ApiError> {
    // A declared length (`Content-Length`) is known before any byte is read.
    let declared = body.size_hint().lower();
    if declared > limit as u64 {
        return Err(ApiError::too_large(limit));
    }
    // Room is made as bytes come, not for the declared length: a client that declares
    // 8 MiB and sends one byte holds one byte.
    let mut bytes = Vec::new();
    let mut held = None;
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
        budget.take(&mut held, data.len())?;
        bytes.extend_from_slice(&data);
    }
    Ok((Bytes::from(bytes), BodyBytes { _held: held }))
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

    /// Read within a budget of 16 bytes.
    async fn read(body: Body, limit: usize, wait: Duration) -> Result<Bytes, ApiError> {
        let read = super::read(body, limit, wait, &BodyBudget::new(2, 8)).await;
        read.map(|(bytes, _)| bytes)
    }

    #[tokio::test]
    async fn bodies_hold_their_bytes_of_the_budget_until_given_up_or_answered() {
        let budget = BodyBudget::new(1, 8);
        let wait = Duration::from_secs(5);
        // A body that stalls after 6 bytes holds them until it is given up.
        let (first, rest) = tokio::sync::mpsc::channel::<Result<Bytes, io::Error>>(1);
        first.send(Ok(Bytes::from_static(b"123456"))).await.unwrap();
        let stalled = Body::from_stream(tokio_stream_of(rest));
        let reading = super::read(stalled, 8, wait, &budget);
        let reading = tokio::time::timeout(Duration::from_millis(100), reading).await;
        assert!(reading.is_err(), "the stalled body was read");
        // Given up (the timeout dropped it): all 8 bytes are free again.
        let (whole, held) = super::read(Body::from("12345678"), 8, wait, &budget)
            .await
            .unwrap();
        assert_eq!(whole, Bytes::from_static(b"12345678"));
        // Until its request is over, the whole body holds its bytes.
        let busy = super::read(Body::from("1"), 8, wait, &budget).await;
        assert_eq!(busy.unwrap_err().status(), StatusCode::SERVICE_UNAVAILABLE);
        drop(held);
        drop(first);

        // While one body holds 6 bytes, another of 3 finds the budget spent.
        let (first, rest) = tokio::sync::mpsc::channel::<Result<Bytes, io::Error>>(1);
        first.send(Ok(Bytes::from_static(b"123456"))).await.unwrap();
        let stalled = super::read(Body::from_stream(tokio_stream_of(rest)), 8, wait, &budget);
        let mut stalled = std::pin::pin!(stalled);
        assert!(futures::poll!(stalled.as_mut()).is_pending());
        let busy = super::read(Body::from("123"), 8, wait, &budget).await;
        assert_eq!(busy.unwrap_err().status(), StatusCode::SERVICE_UNAVAILABLE);
        drop(first);
        assert!(stalled.await.is_ok());
    }

    /// The pieces sent on `receiver`, as a stream.
    fn tokio_stream_of(
        receiver: tokio::sync::mpsc::Receiver<Result<Bytes, io::Error>>,
    ) -> impl futures::Stream<Item = Result<Bytes, io::Error>> {
        futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|piece| (piece, receiver))
        })
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
