//! The figures of a run: per mode and per BFCL category, as a table, JSON and a chart.

use super::case::Skipped;
use super::run::Outcome;
use serde_json::{json, Map, Value as Json};
use std::fmt::Write as _;

/// The figures of a set of outcomes (one mode, or one category of one mode).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Cases asked.
    pub cases: usize,
    /// Cases whose calls match the possible answer.
    pub correct: usize,
    /// Cases whose answer has at least one call and every call binds.
    pub valid: usize,
    /// Cases whose request failed (endpoint error or timeout); counted as wrong.
    pub failed: usize,
    /// Median time per case, in milliseconds.
    pub latency_p50_ms: u64,
    /// 95th percentile of the time per case, in milliseconds.
    pub latency_p95_ms: u64,
    /// Mean prompt tokens per case (every round).
    pub prompt_tokens: f64,
    /// Mean completion tokens per case (every round).
    pub completion_tokens: f64,
}

impl Summary {
    /// The figures of `outcomes`.
    pub fn of<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Summary {
        let outcomes: Vec<&Outcome> = outcomes.into_iter().collect();
        let mut latencies: Vec<u64> = outcomes.iter().map(|o| o.latency_ms).collect();
        latencies.sort_unstable();
        let n = outcomes.len();
        let mean = |f: fn(&Outcome) -> u64| {
            if n == 0 {
                0.0
            } else {
                outcomes.iter().map(|o| f(o) as f64).sum::<f64>() / n as f64
            }
        };
        Summary {
            cases: n,
            correct: outcomes.iter().filter(|o| o.correct).count(),
            valid: outcomes.iter().filter(|o| o.valid).count(),
            failed: outcomes.iter().filter(|o| o.endpoint_failed).count(),
            latency_p50_ms: percentile(&latencies, 50),
            latency_p95_ms: percentile(&latencies, 95),
            prompt_tokens: mean(|o| o.prompt_tokens),
            completion_tokens: mean(|o| o.completion_tokens),
        }
    }

    /// The share of correct cases, 0 to 1.
    pub fn accuracy(&self) -> f64 {
        share(self.correct, self.cases)
    }

    /// The share of valid answers, 0 to 1.
    pub fn valid_share(&self) -> f64 {
        share(self.valid, self.cases)
    }

    fn to_json(&self) -> Map<String, Json> {
        let round = |x: f64| (x * 10_000.0).round() / 10_000.0;
        let mut out = Map::new();
        out.insert("cases".into(), json!(self.cases));
        out.insert("accuracy".into(), json!(round(self.accuracy())));
        out.insert("valid".into(), json!(round(self.valid_share())));
        out.insert("correct".into(), json!(self.correct));
        out.insert("valid_answers".into(), json!(self.valid));
        out.insert("failed_requests".into(), json!(self.failed));
        out.insert(
            "latency_ms".into(),
            json!({"p50": self.latency_p50_ms, "p95": self.latency_p95_ms}),
        );
        out.insert(
            "tokens".into(),
            json!({"prompt": round(self.prompt_tokens), "completion": round(self.completion_tokens)}),
        );
        out
    }
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The nearest-rank percentile of sorted values (0 when there are none).
fn percentile(sorted: &[u64], p: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

/// A whole run: each mode's figures, overall and per category, in the order the modes
/// were asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Per mode: the summary over all cases, and per category.
    pub modes: Vec<ModeReport>,
    /// Cases that did not load.
    pub skipped: Vec<Skipped>,
    /// Whether the run was cut short (the figures cover what was measured).
    pub interrupted: bool,
    /// Every outcome, in the order they came in.
    pub outcomes: Vec<Outcome>,
}

/// One mode's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeReport {
    /// The mode as written (`text+desc`).
    pub mode: String,
    /// Over every case.
    pub all: Summary,
    /// Per BFCL category, in order of first appearance.
    pub categories: Vec<(String, Summary)>,
}

impl Report {
    /// The report of `outcomes` for `modes` (in that order).
    pub fn new(
        modes: &[String],
        outcomes: Vec<Outcome>,
        skipped: Vec<Skipped>,
        interrupted: bool,
    ) -> Report {
        let modes = modes
            .iter()
            .map(|mode| {
                let mine: Vec<&Outcome> = outcomes.iter().filter(|o| &o.mode == mode).collect();
                let mut names: Vec<&str> = Vec::new();
                for outcome in &mine {
                    if !names.contains(&outcome.category.as_str()) {
                        names.push(&outcome.category);
                    }
                }
                names.sort_unstable();
                let categories = names
                    .iter()
                    .map(|name| {
                        let of = mine.iter().copied().filter(|o| o.category == *name);
                        ((*name).to_owned(), Summary::of(of))
                    })
                    .collect();
                ModeReport {
                    mode: mode.clone(),
                    all: Summary::of(mine.iter().copied()),
                    categories,
                }
            })
            .collect();
        Report {
            modes,
            skipped,
            interrupted,
            outcomes,
        }
    }

    /// `{"modes": {"<mode>": {"cases", "accuracy", "valid", ..., "categories": {...}}},
    /// "skipped", "interrupted", "outcomes"}`.
    pub fn to_json(&self) -> Json {
        let mut modes = Map::new();
        for mode in &self.modes {
            let mut entry = mode.all.to_json();
            let categories: Map<String, Json> = mode
                .categories
                .iter()
                .map(|(name, summary)| (name.clone(), Json::Object(summary.to_json())))
                .collect();
            entry.insert("categories".into(), Json::Object(categories));
            modes.insert(mode.mode.clone(), Json::Object(entry));
        }
        json!({
            "modes": modes,
            "skipped": self.skipped,
            "interrupted": self.interrupted,
            "outcomes": self.outcomes,
        })
    }

    /// The figures as a plain-text table, one line per mode and one per category under it.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<24} {:>6} {:>9} {:>7} {:>8} {:>8} {:>10} {:>7}",
            "mode", "cases", "accuracy", "valid", "p50 ms", "p95 ms", "tokens in", "out"
        );
        for mode in &self.modes {
            line(&mut out, &mode.mode, &mode.all);
            if mode.categories.len() > 1 {
                for (name, summary) in &mode.categories {
                    line(&mut out, &format!("  {name}"), summary);
                }
            }
        }
        if !self.skipped.is_empty() {
            let _ = writeln!(
                out,
                "{} case(s) skipped: they did not load",
                self.skipped.len()
            );
        }
        if self.interrupted {
            let _ = writeln!(
                out,
                "interrupted: the figures cover the cases answered so far"
            );
        }
        out
    }
}

fn line(out: &mut String, name: &str, s: &Summary) {
    let _ = write!(
        out,
        "{:<24} {:>6} {:>8.1}% {:>6.1}% {:>8} {:>8} {:>10.0} {:>7.1}",
        name,
        s.cases,
        s.accuracy() * 100.0,
        s.valid_share() * 100.0,
        s.latency_p50_ms,
        s.latency_p95_ms,
        s.prompt_tokens,
        s.completion_tokens
    );
    if s.failed > 0 {
        let _ = write!(out, "  ({} request(s) failed)", s.failed);
    }
    out.push('\n');
}
