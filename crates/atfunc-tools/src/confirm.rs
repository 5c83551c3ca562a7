//! Calls held for the user's confirmation.
//!
//! A function or a whole box can be marked as needing confirmation
//! ([`Registry::require_confirmation`](super::Registry::require_confirmation), or
//! `"confirm": true` in a config). A model's call of it is bound as usual and then, instead
//! of running, goes to the registry's [`Confirmer`]:
//!
//! 1. [`Decision::Run`]: it runs now, like any other call.
//! 2. [`Decision::Decline`]: it does not run; the model is told the user declined it
//!    ([`ToolError::Declined`]).
//! 3. [`Decision::Hold`] (with no confirmer, the default): it waits in the registry under
//!    a fresh confirmation id (a UUID v4), and the model's result is exactly
//!    `{"executed": false, "status": "confirmation_required", "confirmation_id": "<id>"}`:
//!    never the arguments, a preview or anything else the user is asked about, so the
//!    model cannot act as if it had run. The host later runs it with
//!    [`Registry::confirm`](super::Registry::confirm) or drops it with
//!    [`Registry::reject`](super::Registry::reject).
//!
//! Held calls are bounded ([`HoldLimits`]): each expires [`HoldLimits::expire_after`]
//! after it was held (10 minutes by default) and can no longer be confirmed; at most
//! [`HoldLimits::max_held`] wait at once (1000 by default). A call that would be one more
//! is neither run nor held: the model gets [`ToolError::HoldLimit`], and the calls that
//! wait already stay as they are, so nothing the user may be looking at disappears.
//!
//! Expiry is noticed when the registry next looks at its held calls (a call is held,
//! confirmed or rejected, or [`Registry::held_calls`](super::Registry::held_calls) is
//! asked): each call that expired gets its `error` event then. The registry's
//! [statistics](super::Registry::stats) count a held call when it is held (a call of its
//! box, not an error), a declined one as an error, and a confirmed one once more when it
//! runs.

use super::toolbox::{CallContext, ToolBox, ToolError};
use async_trait::async_trait;
use atfunc::bind::Body;
use atfunc::parse::Call;
use serde_json::{json, Map, Value as Json};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a held call can be confirmed, unless [`HoldLimits`] say otherwise.
pub const DEFAULT_HOLD_EXPIRY: Duration = Duration::from_secs(10 * 60);

/// How many calls may wait for confirmation at once, unless [`HoldLimits`] say otherwise.
pub const DEFAULT_MAX_HELD: usize = 1000;

/// The bounds on held calls; see [`Registry::set_hold_limits`](super::Registry::set_hold_limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HoldLimits {
    /// A held call older than this can no longer be confirmed
    /// ([`ConfirmError::Expired`]).
    pub expire_after: Duration,
    /// At most this many calls wait at once; one more is refused
    /// ([`ToolError::HoldLimit`]) after expired ones are dropped.
    pub max_held: usize,
}

impl HoldLimits {
    /// The same limits with [`expire_after`](Self::expire_after) set.
    pub fn with_expire_after(mut self, expire_after: Duration) -> Self {
        self.expire_after = expire_after;
        self
    }

    /// The same limits with [`max_held`](Self::max_held) set.
    pub fn with_max_held(mut self, max_held: usize) -> Self {
        self.max_held = max_held;
        self
    }
}

impl Default for HoldLimits {
    fn default() -> HoldLimits {
        HoldLimits {
            expire_after: DEFAULT_HOLD_EXPIRY,
            max_held: DEFAULT_MAX_HELD,
        }
    }
}

/// A call that needs the user's confirmation, as a host shows it to the user.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HeldCall {
    /// The id to confirm or reject it by; given to the model too.
    pub confirmation_id: String,
    /// The call's id in events and hooks.
    pub call_id: String,
    /// The name as the model wrote it.
    pub name: String,
    /// The function it resolved to, as defined (`files.delete`).
    pub function: String,
    /// The bound arguments, keyed as the interface spells them.
    pub args: Map<String, Json>,
    /// The `with_body [[ ... ]]` block of an api-wrapper call.
    pub body: Option<Body>,
    /// The call as the model wrote it, without the `@`, as its result block shows it
    /// (`Files.Delete("notes.txt")`): the block of its result, once confirmed
    /// ([`Registry::confirm_outcome`](super::Registry::confirm_outcome)), shows it the
    /// same way, so the model can tell which call it answers.
    pub call_text: String,
}

/// What happens to a call that needs confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Run it now.
    Run,
    /// Do not run it; the model is told the user declined it.
    Decline,
    /// Keep it in the registry, for [`Registry::confirm`](super::Registry::confirm) or
    /// [`Registry::reject`](super::Registry::reject) later.
    Hold,
}

/// Decides, when a call that needs confirmation comes, what happens to it: asks the user
/// on a terminal, checks a policy, or always gives the same [`Decision`] (which is a
/// `Confirmer` itself: `registry.set_confirmer(Decision::Run)`).
///
/// The calls of an answer after this one wait while it decides.
#[async_trait]
pub trait Confirmer: Send + Sync {
    /// The decision for `call`.
    async fn decide(&self, call: &HeldCall) -> Decision;
}

/// A shared confirmer, so the host keeps a handle on it.
#[async_trait]
impl<T: Confirmer + ?Sized> Confirmer for Arc<T> {
    async fn decide(&self, call: &HeldCall) -> Decision {
        (**self).decide(call).await
    }
}

#[async_trait]
impl Confirmer for Decision {
    async fn decide(&self, _call: &HeldCall) -> Decision {
        *self
    }
}

/// Why [`Registry::confirm`](super::Registry::confirm) or
/// [`Registry::reject`](super::Registry::reject) did not run or drop a call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfirmError {
    /// No call waits under this id: it was never given, or was confirmed or rejected
    /// already.
    #[error("no call waits for confirmation under the id '{id}' (it was confirmed or rejected already, or never held)")]
    Unknown {
        /// The id asked for.
        id: String,
    },
    /// The call waited longer than [`HoldLimits::expire_after`] and was dropped unrun.
    #[error(
        "the call of '{function}' held under '{id}' expired after {} without being confirmed; it did not run",
        super::toolbox::human_duration(*.after)
    )]
    Expired {
        /// The id asked for.
        id: String,
        /// The function the call was for.
        function: String,
        /// How long calls can wait.
        after: Duration,
    },
    /// The confirmed call ran and failed.
    #[error(transparent)]
    Failed(#[from] ToolError),
}

/// The model's result for a held call: its status and the id, nothing else.
///
/// ```
/// use atfunc_tools::held_result;
/// assert_eq!(
///     held_result("0d5f1a9e-...").to_string(),
///     r#"{"executed":false,"status":"confirmation_required","confirmation_id":"0d5f1a9e-..."}"#,
/// );
/// ```
pub fn held_result(confirmation_id: &str) -> Json {
    json!({
        "executed": false,
        "status": "confirmation_required",
        "confirmation_id": confirmation_id,
    })
}

/// A fresh UUID version 4, from the operating system's random source.
pub(super) fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness (a sandbox that forbids it): std's randomly keyed hasher over
        // the time and a counter still makes ids that do not repeat.
        use std::hash::BuildHasher;
        static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let count = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let state = std::collections::hash_map::RandomState::new();
        let high = state.hash_one((0u8, count, nanos)).to_be_bytes();
        let low = state.hash_one((1u8, count, nanos)).to_be_bytes();
        for (slot, byte) in bytes.iter_mut().zip(high.iter().chain(&low)) {
            *slot = *byte;
        }
    }
    // RFC 9562: version 4 in the high nibble of byte 6, the variant 10 in byte 8.
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A held call with what running it takes.
pub(super) struct Held {
    pub(super) call: HeldCall,
    /// The call as parsed, for its outcome once confirmed.
    pub(super) parsed: Call,
    /// The truncate length of the answer it was held in, for its outcome once confirmed.
    pub(super) limit: usize,
    pub(super) tool_box: Arc<dyn ToolBox>,
    /// The function as the box names it.
    pub(super) box_function: String,
    pub(super) ctx: CallContext,
    pub(super) timeout: Option<Duration>,
}

/// A held call in the store, since when it waits.
struct Waiting {
    held: Held,
    since: Instant,
}

/// The calls waiting, and the ids of recently expired ones (so that confirming one says
/// "expired" rather than "unknown"), both bounded by `max_held`.
#[derive(Default)]
pub(super) struct HeldCalls {
    waiting: HashMap<String, Waiting>,
    /// Ids of expired calls and their functions, oldest first.
    expired: VecDeque<(String, String)>,
    pub(super) limits: HoldLimits,
}

impl HeldCalls {
    /// Moves expired calls out of `waiting`; they are returned for their events.
    pub(super) fn expire(&mut self) -> Vec<Held> {
        let limit = self.limits.expire_after;
        let old: Vec<String> = self
            .waiting
            .iter()
            .filter(|(_, waiting)| waiting.since.elapsed() >= limit)
            .map(|(id, _)| id.clone())
            .collect();
        let mut gone = Vec::with_capacity(old.len());
        for id in old {
            if let Some(Waiting { held, .. }) = self.waiting.remove(&id) {
                self.expired.push_back((id, held.call.function.clone()));
                gone.push(held);
            }
        }
        while self.expired.len() > self.limits.max_held.max(1) {
            self.expired.pop_front();
        }
        gone
    }

    /// Keeps `held` and gives its id, unless `max_held` calls wait already: then it is
    /// dropped, and its function's name given back.
    pub(super) fn insert(&mut self, held: Held) -> Result<String, String> {
        if self.waiting.len() >= self.limits.max_held {
            return Err(held.call.function);
        }
        let id = held.call.confirmation_id.clone();
        let since = Instant::now();
        self.waiting.insert(id.clone(), Waiting { held, since });
        Ok(id)
    }

    /// Takes the call waiting under `id` out (call [`HeldCalls::expire`] first).
    pub(super) fn take(&mut self, id: &str) -> Result<Held, ConfirmError> {
        if let Some(waiting) = self.waiting.remove(id) {
            return Ok(waiting.held);
        }
        match self.expired.iter().find(|(old, _)| old == id) {
            Some((_, function)) => Err(ConfirmError::Expired {
                id: id.to_owned(),
                function: function.clone(),
                after: self.limits.expire_after,
            }),
            None => Err(ConfirmError::Unknown { id: id.to_owned() }),
        }
    }

    /// The calls waiting, oldest first.
    pub(super) fn list(&self) -> Vec<HeldCall> {
        let mut waiting: Vec<&Waiting> = self.waiting.values().collect();
        waiting.sort_by_key(|waiting| waiting.since);
        waiting
            .into_iter()
            .map(|waiting| waiting.held.call.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_version_4_uuids_and_differ() {
        let a = new_id();
        let b = new_id();
        assert_ne!(a, b);
        for id in [&a, &b] {
            let parts: Vec<&str> = id.split('-').collect();
            let lengths: Vec<usize> = parts.iter().map(|p| p.len()).collect();
            assert_eq!(lengths, [8, 4, 4, 4, 12], "{id}");
            assert!(id.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
            assert!(parts[2].starts_with('4'), "{id}");
            assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{id}");
        }
    }
}
