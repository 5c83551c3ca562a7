//! A model's answer run while it streams in, its words and its calls' outcomes served to a
//! client as server-sent events, from one parse: the registry is shared in an `Arc`, and
//! each response owns the stream of its pieces (`Registry::stream().run_with_text(..)`
//! borrows nothing).
//!
//! Run with `cargo run -p atfunc-tools --example sse`, then
//! `curl -N http://127.0.0.1:3000/answer`.

use atfunc::{json, Interface, Param, ParamType};
use atfunc_tools::{FnBox, Outcome, Piece, Registry};
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::routing::get;
use axum::Router;
use futures::{Stream, StreamExt};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// A registry with one tool, `weather.get_temp(city)`.
pub fn registry() -> Result<Registry, Box<dyn std::error::Error>> {
    let registry = Registry::new();
    registry.register(
        FnBox::new("weather").function(
            Interface::new("get_temp")
                .in_domain("weather")
                .describe("Current temperature of a city, in °C")
                .param(Param::new("city", ParamType::String).required()),
            |args, _ctx| {
                let city: String = args.get("city")?;
                Ok(json!({"city": city, "celsius": 4}))
            },
        ),
    )?;
    Ok(registry)
}

/// The model's answer as an upstream sends it: chunks that split calls anywhere, a
/// little apart.
fn model_answer() -> impl Stream<Item = Result<&'static str, std::io::Error>> + Send + 'static {
    let chunks = [
        "Oslo: @weather.get_temp(\"Os",
        "lo\"), Bergen: @weather.get",
        "_temp(\"Bergen\"), and @weather.get_rain(\"Oslo\").",
    ];
    futures::stream::iter(chunks).then(|chunk| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(chunk)
    })
}

/// In the answer's order: a `text` event for the model's words as they come, an `outcome`
/// event where each call stood (`data` is the outcome as JSON), then `done` with the
/// result blocks for the model's next turn.
async fn answer(
    State(registry): State<Arc<Registry>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    // Owned: the response body may outlive this handler and the registry's handle.
    let pieces = registry.stream().run_with_text(model_answer());
    let events = futures::stream::unfold(Some(pieces), |pieces| async move {
        let mut pieces = pieces?;
        let event = match pieces.next().await {
            Some(Ok(Piece::Text(text))) => Event::default().event("text").data(text),
            Some(Ok(Piece::Outcome(outcome))) => outcome_event(&outcome),
            Some(Ok(_)) => Event::default().comment("a piece this service does not show"),
            Some(Err(error)) => Event::default().event("error").data(error.to_string()),
            None => {
                let report = pieces.report();
                return Some((Ok(Event::default().event("done").data(report.output)), None));
            }
        };
        Some((Ok(event), Some(pieces)))
    });
    Sse::new(events)
}

fn outcome_event(outcome: &Outcome) -> Event {
    Event::default()
        .event("outcome")
        .data(outcome.to_json().to_string())
}

/// The service: `GET /answer`.
pub fn app(registry: Arc<Registry>) -> Router {
    Router::new()
        .route("/answer", get(answer))
        .with_state(registry)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = app(Arc::new(registry()?));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("curl -N http://{}/answer", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
