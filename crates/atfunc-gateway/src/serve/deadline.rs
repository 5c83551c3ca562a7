//! An answer's body cut off at the request's deadline.

use axum::body::{Body, Bytes};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::time::{Instant, Sleep};

/// What makes a stream's last event, when it is cut: written then, so that it tells what
/// happened up to the cut.
pub(crate) type LastEvent = Box<dyn FnOnce() -> Bytes + Send>;

/// `body` until `deadline`; then `last` (an error event, for a stream) and the end, or,
/// without `last`, an error that breaks the answer off: a client must not take a cut-off
/// answer for a whole one.
pub(crate) struct Cut {
    body: Body,
    sleep: Pin<Box<Sleep>>,
    last: Option<LastEvent>,
    /// Whether the deadline has passed (and `last` was sent, if any).
    cut: bool,
}

impl Cut {
    pub(crate) fn new(body: Body, deadline: Instant, last: Option<LastEvent>) -> Cut {
        Cut {
            body,
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
            last,
            cut: false,
        }
    }
}

impl HttpBody for Cut {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if this.cut {
            return Poll::Ready(None);
        }
        // The deadline first: a body that always has a byte ready must still be cut.
        if this.sleep.as_mut().poll(cx).is_ready() {
            this.cut = true;
            return Poll::Ready(Some(match this.last.take() {
                Some(last) => Ok(Frame::data(last())),
                None => Err(axum::Error::new("the request's time limit passed")),
            }));
        }
        Pin::new(&mut this.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.cut || self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        if self.last.is_some() {
            // The error event may be added: the length is not known ahead.
            let mut hint = SizeHint::new();
            hint.set_lower(self.body.size_hint().lower());
            hint
        } else {
            self.body.size_hint()
        }
    }
}
