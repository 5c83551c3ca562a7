//! What the gateway finds out about its upstream by itself: the kind of server (and so the
//! field a grammar goes in) and the call format its model's chat template teaches, and the
//! policy it chooses from them. The contract is docs/gateway.md, "What the gateway finds
//! out by itself"; here it is in three steps, only the first of which does I/O:
//!
//! 1. [`Probe::run`] asks the upstream's own routes at once (`GET /props`, `/v1/models`,
//!    `/api/version`, `/version`, `/get_model_info`), each within a short time limit and
//!    a bounded body, and keeps what each answered as a [`Reply`]. Nothing is an error:
//!    a refused connection, a time limit, an HTML 404 or JSON of another shape each only
//!    say "not this kind".
//! 2. [`identify`](identify::identify) reads the replies into what was [`Found`] (`None`:
//!    nothing answered, or only "503, still loading"), and [`template_calls`] reads a chat
//!    template.
//! 3. [`policy::choose`] looks the finding up in the tables ([`policy::GRAMMAR_FIELDS`],
//!    [`policy::BY_TEMPLATE`]); [`InEffect::resolve`] puts a setting given by hand above
//!    what was chosen, and what was chosen above the defaults.
//!
//! The policy in effect is one [`InEffect`] behind an `Arc`, swapped whole under a lock
//! ([`PolicyCell`]): a request reads it once, so one request never mixes two policies.
mod identify;
mod policy;

use identify::{identify, Replies, Reply, ServerKind};
pub(crate) use identify::{template_calls, Found};
pub(crate) use policy::{Finding, InEffect, DEFAULTS};

use super::options::GatewayOptions;
use crate::endpoint::{Endpoint, Route, TimeLimit};
use axum::http::HeaderValue;
use serde_json::json;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

/// Most bytes read of one probe's answer: a chat template is a few KB, a server's
/// properties some more; anything far larger is not an answer worth reading.
const MAX_PROBE_BYTES: usize = 1 << 20;

/// The wait between two probes while the start waits for the upstream.
const RETRY_AT_START: Duration = Duration::from_millis(500);

/// The first wait between two probes in the background, doubled after each that found
/// nothing, up to [`MOST_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// The longest wait between two background probes: an upstream that comes up late is
/// found within this long of answering.
const MOST_BACKOFF: Duration = Duration::from_secs(30);

/// The policy in effect, swapped whole when the upstream is found late.
#[derive(Debug)]
pub(crate) struct PolicyCell(RwLock<Arc<InEffect>>);

impl PolicyCell {
    pub(crate) fn new(policy: InEffect) -> PolicyCell {
        PolicyCell(RwLock::new(Arc::new(policy)))
    }

    /// The policy in effect now; a request reads it once.
    pub(crate) fn get(&self) -> Arc<InEffect> {
        // A poisoned lock still holds a whole policy: it is only ever swapped.
        Arc::clone(&self.0.read().unwrap_or_else(|e| e.into_inner()))
    }

    fn set(&self, policy: InEffect) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(policy);
    }
}

/// The probes of one upstream: its address, with a short time limit and a small bound on
/// each answer, and the key it gets.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    endpoint: Endpoint,
    auth: Option<HeaderValue>,
}

impl Probe {
    /// The probes of `options`' upstream; `None` when its URL cannot be asked (which
    /// `Gateway::new` refuses before).
    pub(crate) fn new(options: &GatewayOptions, auth: Option<HeaderValue>) -> Option<Probe> {
        let limit = TimeLimit::Whole(options.detect.probe_timeout);
        let endpoint = Endpoint::new(&options.upstream.url, limit, MAX_PROBE_BYTES).ok()?;
        Some(Probe { endpoint, auth })
    }

    /// One reply: a `GET` of `route`, or a `POST` of `body`.
    async fn ask(&self, route: Route, body: Option<String>) -> Reply {
        let auth = self.auth.as_ref();
        let sent = match body {
            Some(body) => self.endpoint.post(route, body, auth).await,
            None => self.endpoint.get(route, auth).await,
        };
        let Ok(mut response) = sent else {
            return Reply::Nothing;
        };
        let status = response.status();
        if !status.is_success() {
            return Reply::Status(status.as_u16());
        }
        match self.endpoint.read_text(&mut response).await {
            Ok(text) => serde_json::from_str(&text).map_or(Reply::NotJson, Reply::Json),
            Err(_) => Reply::NotJson,
        }
    }

    /// Asks every route at once and reads what they say; `None` when nothing answered.
    /// For Ollama, whose routes do not show a template, the first model listed is asked
    /// for its own (`POST /api/show`).
    pub(crate) async fn run(&self) -> Option<Found> {
        let (props, models, ollama_version, version, model_info) = tokio::join!(
            self.ask(Route::Own("/props"), None),
            self.ask(Route::Models, None),
            self.ask(Route::Own("/api/version"), None),
            self.ask(Route::Own("/version"), None),
            self.ask(Route::Own("/get_model_info"), None),
        );
        let replies = Replies {
            props,
            models,
            ollama_version,
            version,
            model_info,
        };
        let mut found = identify(&replies)?;
        if found.server == ServerKind::Ollama {
            if let Some(model) = &found.model {
                let body = json!({"model": model}).to_string();
                let shown = self.ask(Route::Own("/api/show"), Some(body)).await;
                found.template = shown.text("template").map(|t| template_calls(&t));
            }
        }
        Some(found)
    }
}

/// Finds the upstream at start, within `options.detect.wait_at_start`, and sets the policy
/// in `cell`; when nothing answers by then, the defaults stay and the upstream is asked
/// again in the background, waiting longer each time, until it answers (or the gateway,
/// which holds `cell`, is gone). Writes what it found and chose to stderr, each time.
pub(crate) async fn at_start(cell: &Arc<PolicyCell>, probe: Probe, options: &GatewayOptions) {
    let deadline = tokio::time::Instant::now() + options.detect.wait_at_start;
    loop {
        match tokio::time::timeout_at(deadline, probe.run()).await {
            Ok(Some(found)) => {
                let policy = InEffect::resolve(options, Finding::Found(found));
                say(&policy);
                cell.set(policy);
                return;
            }
            Ok(None) if tokio::time::Instant::now() + RETRY_AT_START < deadline => {
                tokio::time::sleep(RETRY_AT_START).await;
            }
            Ok(None) | Err(_) => break,
        }
    }
    let policy = InEffect::resolve(options, Finding::Waiting);
    say(&policy);
    cell.set(policy);
    let cell = Arc::downgrade(cell);
    let options = options.clone();
    tokio::spawn(async move { in_background(cell, probe, options).await });
}

/// Asks the upstream again and again, waiting longer each time, until it answers; then
/// sets the policy for what it found.
async fn in_background(cell: Weak<PolicyCell>, probe: Probe, options: GatewayOptions) {
    let mut wait = FIRST_BACKOFF;
    loop {
        tokio::time::sleep(wait).await;
        if cell.strong_count() == 0 {
            return;
        }
        if let Some(found) = probe.run().await {
            let Some(cell) = cell.upgrade() else {
                return;
            };
            let policy = InEffect::resolve(&options, Finding::Found(found));
            eprintln!(
                "atfunc serve: the upstream answered now; the requests from here on are \
                 answered as follows"
            );
            say(&policy);
            cell.set(policy);
            return;
        }
        wait = (wait * 2).min(MOST_BACKOFF);
    }
}

/// Writes what was found and chosen to stderr.
fn say(policy: &InEffect) {
    for line in policy.lines() {
        eprintln!("atfunc serve: {line}");
    }
}
