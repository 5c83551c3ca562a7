//! The figures of a run: per mode and per BFCL category, as a table, JSON and a chart.

use super::case::Skipped;
use super::run::CaseOutcome;
use serde_json::{json, Map, Value as Json};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

/// The figures of a set of outcomes (one mode, or one category of one mode).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Summary {
    /// Cases asked.
    pub cases: usize,
    /// Cases whose calls match the possible answer.
    pub correct: usize,
    /// Cases whose answer has at least one call and every call binds.
    pub valid: usize,
    /// Cases whose request failed (endpoint error or timeout); counted as wrong.
    pub failed: usize,
    /// Cases whose answer has no call at all (the right answer in `irrelevance`).
    pub no_call: usize,
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
    pub fn of<'a>(outcomes: impl IntoIterator<Item = &'a CaseOutcome>) -> Summary {
        let outcomes: Vec<&CaseOutcome> = outcomes.into_iter().collect();
        let mut latencies: Vec<u64> = outcomes.iter().map(|o| o.latency_ms).collect();
        latencies.sort_unstable();
        let n = outcomes.len();
        let mean = |f: fn(&CaseOutcome) -> u64| {
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
            no_call: outcomes
                .iter()
                .filter(|o| o.no_call && !o.endpoint_failed)
                .count(),
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

    /// The share of answers without a call, 0 to 1.
    pub fn no_call_share(&self) -> f64 {
        share(self.no_call, self.cases)
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
        out.insert("no_call".into(), json!(round(self.no_call_share())));
        out.insert("no_call_answers".into(), json!(self.no_call));
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
#[non_exhaustive]
pub struct Report {
    /// Per mode: the summary over all cases, and per category.
    pub modes: Vec<ModeReport>,
    /// Cases that did not load.
    pub skipped: Vec<Skipped>,
    /// Whether the run was cut short (the figures cover what was measured).
    pub interrupted: bool,
    /// Every outcome, in the order they came in.
    pub outcomes: Vec<CaseOutcome>,
    /// The settings the outcomes were measured with.
    pub settings: Option<RunSettings>,
    /// Per mode, the note on the server it was measured on (`--server-note`).
    pub servers: BTreeMap<String, String>,
    /// Per category, how many cases its questions file holds: a category with fewer
    /// outcomes ran on a subset.
    pub available: BTreeMap<String, usize>,
    /// Per mode that is a gateway policy, how to start `atfunc serve` (and the
    /// `tool_choice` its clients send) to answer as the mode did
    /// ([`Evaluator::serve_flags`](super::Evaluator::serve_flags)).
    pub gateway: BTreeMap<String, String>,
}

/// What an earlier run must share with this one for its outcomes to be kept: the
/// request fields that change answers. The endpoint's address is not among them (a
/// server may move); its note is, per mode ([`Report::servers`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunSettings {
    /// The `model` field of each request.
    pub model: String,
    /// The `max_tokens` of each request.
    pub max_tokens: u32,
    /// How often `repair` asks again.
    pub repair_rounds: usize,
    /// The call format `dialect` mode read the answers in (`hermes`, `auto`, ...), when
    /// the run measured that mode. A report of one dialect is not continued with another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
    /// How `dialect-grammar` and `dialect-auto` held the answers, when the run measured one: `list` (one
    /// fenced JSON list of calls) or `blocks` (`--hermes-blocks`). Absent in reports
    /// written before the list, which held them to blocks: a run of either does not
    /// continue them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hermes_layout: Option<String>,
    /// The gateway's `--call-threshold` in the modes it weighs (`auto`, `dialect-auto`),
    /// when the run set one. A report of one threshold is not continued with another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_threshold: Option<f64>,
    /// The threshold mode `auto` weighed at by default, as the gateway does
    /// ([`DEFAULT_CALL_THRESHOLD`](atfunc_gateway::serve::DEFAULT_CALL_THRESHOLD)), when the run
    /// measured that mode without `--call-threshold`. Absent in reports written before the
    /// gateway weighed by default, whose mode `auto` went unweighed: a run with
    /// `--call-threshold off` continues them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_call_threshold: Option<f64>,
    /// The `max_tokens` of `decide`'s first request. Reports written before it was kept
    /// were measured with 32, the default.
    #[serde(default = "default_decide_max_tokens")]
    pub decide_max_tokens: u32,
    /// Answers asked per request, the calls chosen by a vote
    /// ([`EvalOptions::samples`](super::EvalOptions::samples)); 1 in older reports.
    #[serde(default = "one")]
    pub samples: u32,
    /// The temperature of the samples after the first
    /// ([`EvalOptions::sample_temperature`](super::EvalOptions::sample_temperature)).
    #[serde(default = "default_sample_temperature")]
    pub sample_temperature: f64,
    /// How often an answer that does not bind was asked again
    /// ([`EvalOptions::resamples`](super::EvalOptions::resamples)); 0 in older reports.
    #[serde(default)]
    pub resamples: u32,
    /// Fields added to every request ([`EvalOptions::request_fields`](
    /// super::EvalOptions::request_fields)); none in older reports.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub request_fields: BTreeMap<String, Json>,
    /// Whether every call of an answer was read
    /// ([`EvalOptions::keep_repeated_calls`](super::EvalOptions::keep_repeated_calls)).
    /// Reports written before answers were read up to the first repeated call read every
    /// call, so it is true when absent.
    #[serde(default = "yes")]
    pub keep_repeated_calls: bool,
}

fn yes() -> bool {
    true
}

fn default_decide_max_tokens() -> u32 {
    32
}

fn one() -> u32 {
    1
}

fn default_sample_temperature() -> f64 {
    0.7
}

impl RunSettings {
    /// The settings as a line of `name value` pairs, for messages.
    fn describe(&self) -> String {
        let mut line = format!(
            "model '{}', max_tokens {}, repair_rounds {}, decide_max_tokens {}, samples {}, \
             sample_temperature {}, resamples {}, {}",
            self.model,
            self.max_tokens,
            self.repair_rounds,
            self.decide_max_tokens,
            self.samples,
            self.sample_temperature,
            self.resamples,
            if self.keep_repeated_calls {
                "every call read (--keep-repeated-calls)"
            } else {
                "read up to a repeated call"
            }
        );
        match self.hermes_layout.as_deref() {
            Some(layout) => {
                let _ = write!(line, ", dialect-grammar layout {layout}");
            }
            None if self.dialect.is_some() => {
                line.push_str(", no dialect-grammar layout recorded (blocks, if measured)");
            }
            None => {}
        }
        if let Some(threshold) = self.call_threshold {
            let _ = write!(line, ", call threshold {threshold}");
        }
        if let Some(threshold) = self.default_call_threshold {
            let _ = write!(line, ", mode auto weighed at {threshold} by default");
        }
        for (name, value) in &self.request_fields {
            let _ = write!(line, ", {name} {value}");
        }
        line
    }
}

/// The outcomes of an earlier run that a new one continues ([`resume`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resumed {
    /// The modes of the earlier run, in its order.
    pub modes: Vec<String>,
    /// Its outcomes; those whose request failed are left out (they are asked again).
    pub outcomes: Vec<CaseOutcome>,
    /// Its server notes per mode.
    pub servers: BTreeMap<String, String>,
    /// Its case counts per category.
    pub available: BTreeMap<String, usize>,
    /// The dialect its `dialect` mode was measured with, if it measured that mode.
    pub dialect: Option<String>,
}

impl Resumed {
    /// The `(mode, id)` pairs already answered.
    pub fn answered(&self) -> HashSet<(String, String)> {
        self.outcomes
            .iter()
            .map(|o| (o.mode.clone(), o.id.clone()))
            .collect()
    }
}

/// Reads a report that an earlier run wrote ([`Report::to_json`]) to continue from it.
/// It must have been measured with the same `settings` (a [`RunSettings::dialect`] given
/// on one side only is no difference: only one run measured `dialect` mode), and each
/// mode of `servers` that it already holds outcomes of on the same server note; otherwise
/// the error says what differs.
pub fn resume(
    text: &str,
    settings: &RunSettings,
    servers: &BTreeMap<String, String>,
) -> Result<Resumed, String> {
    let report: Json = serde_json::from_str(text)
        .map_err(|e| format!("it is not a report of atfunc eval ({e})"))?;
    let theirs: RunSettings = report
        .get("settings")
        .cloned()
        .ok_or("it has no \"settings\", so it cannot be continued")
        .and_then(|s| serde_json::from_value(s).map_err(|_| "its \"settings\" are not readable"))?;
    if let (Some(theirs), Some(ours)) = (&theirs.dialect, &settings.dialect) {
        if theirs != ours {
            return Err(format!(
                "its mode 'dialect' read the answers as {theirs}, and this run reads them as \
                 {ours}"
            ));
        }
    }
    let same = RunSettings {
        dialect: None,
        ..theirs.clone()
    } == RunSettings {
        dialect: None,
        ..settings.clone()
    };
    if !same {
        return Err(format!(
            "it was measured with other settings ({}; now {})",
            theirs.describe(),
            settings.describe()
        ));
    }
    let outcomes: Vec<CaseOutcome> = serde_json::from_value(
        report
            .get("outcomes")
            .cloned()
            .unwrap_or(Json::Array(Vec::new())),
    )
    .map_err(|e| format!("its \"outcomes\" are not readable ({e})"))?;
    let their_servers: BTreeMap<String, String> =
        serde_json::from_value(report.get("servers").cloned().unwrap_or(json!({})))
            .map_err(|e| format!("its \"servers\" are not readable ({e})"))?;
    for (mode, note) in servers {
        let held = outcomes.iter().any(|o| &o.mode == mode);
        let theirs = their_servers.get(mode).map_or("", String::as_str);
        if held && theirs != note {
            return Err(format!(
                "its mode '{mode}' was measured on another server (note '{theirs}', now '{note}')"
            ));
        }
    }
    let mut modes: Vec<String> = Vec::new();
    if let Some(listed) = report.get("modes").and_then(Json::as_object) {
        modes.extend(listed.keys().cloned());
    }
    for outcome in &outcomes {
        if !modes.contains(&outcome.mode) {
            modes.push(outcome.mode.clone());
        }
    }
    let available = serde_json::from_value(report.get("available").cloned().unwrap_or(json!({})))
        .unwrap_or_default();
    Ok(Resumed {
        dialect: theirs.dialect,
        modes,
        outcomes: outcomes
            .into_iter()
            .filter(|o| !o.endpoint_failed)
            .collect(),
        servers: their_servers,
        available,
    })
}

/// One mode's figures.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModeReport {
    /// The mode as written (`text+desc`).
    pub mode: String,
    /// Over every case.
    pub all: Summary,
    /// Per BFCL category, in order of first appearance.
    pub categories: Vec<(String, Summary)>,
}

/// The name of BFCL's "Simple" figure in the reports.
pub const BFCL_SIMPLE: &str = "Simple (BFCL: mean of python, java, javascript)";

/// The categories BFCL's "Simple" averages, each with the same weight.
const SIMPLE_PARTS: [&str; 3] = ["simple_python", "simple_java", "simple_javascript"];

impl ModeReport {
    /// BFCL's "Simple": the unweighted mean of the accuracies of `simple_python`,
    /// `simple_java` and `simple_javascript` (not the share of all their cases right,
    /// which would weigh Python's 400 cases eight times JavaScript's 50). `None` unless
    /// all three categories ran.
    pub fn bfcl_simple(&self) -> Option<f64> {
        let mut sum = 0.0;
        for part in SIMPLE_PARTS {
            let (_, summary) = self.categories.iter().find(|(name, _)| name == part)?;
            sum += summary.accuracy();
        }
        Some(sum / SIMPLE_PARTS.len() as f64)
    }
}

impl Report {
    /// The report of `outcomes` for `modes` (in that order).
    pub fn new(
        modes: &[String],
        outcomes: Vec<CaseOutcome>,
        skipped: Vec<Skipped>,
        interrupted: bool,
    ) -> Report {
        let modes = modes
            .iter()
            .map(|mode| {
                let mine: Vec<&CaseOutcome> = outcomes.iter().filter(|o| &o.mode == mode).collect();
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
            settings: None,
            servers: BTreeMap::new(),
            available: BTreeMap::new(),
            gateway: BTreeMap::new(),
        }
    }

    /// How `mode` is shown in the table, the Markdown and the chart: as it is named, and
    /// `dialect` with the format it read (`dialect (hermes)`).
    pub fn label(&self, mode: &str) -> String {
        match self.settings.as_ref().and_then(|s| s.dialect.as_deref()) {
            Some(dialect) if mode.starts_with("dialect") => {
                format!("{mode} ({dialect})")
            }
            _ => mode.to_owned(),
        }
    }

    /// `{"modes": {"<mode>": {"cases", "accuracy", "valid", "no_call", ..., "categories":
    /// {...}, "bfcl_simple"}}, "settings", "servers", "available", "skipped",
    /// "interrupted", "outcomes"}`, with `bfcl_simple` ([`ModeReport::bfcl_simple`]) only
    /// where the three categories it averages ran.
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
            if let Some(simple) = mode.bfcl_simple() {
                entry.insert("bfcl_simple".into(), json!(simple));
            }
            modes.insert(mode.mode.clone(), Json::Object(entry));
        }
        json!({
            "modes": modes,
            "settings": self.settings,
            "servers": self.servers,
            "available": self.available,
            "gateway": self.gateway,
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
            "{:<24} {:>6} {:>9} {:>7} {:>8} {:>8} {:>8} {:>10} {:>7}",
            "mode", "cases", "accuracy", "valid", "no call", "p50 ms", "p95 ms", "tokens in", "out"
        );
        for mode in &self.modes {
            line(&mut out, &self.label(&mode.mode), &mode.all);
            if mode.categories.len() > 1 {
                for (name, summary) in &mode.categories {
                    line(&mut out, &format!("  {name}"), summary);
                }
            }
            if let Some(simple) = mode.bfcl_simple() {
                let _ = writeln!(out, "  {BFCL_SIMPLE}: {:.1}%", simple * 100.0);
            }
        }
        for mode in &self.modes {
            if let Some(note) = self.servers.get(&mode.mode) {
                let _ = writeln!(out, "{}: measured on {note}", self.label(&mode.mode));
            }
        }
        for mode in &self.modes {
            if let Some(flags) = self.gateway.get(&mode.mode) {
                let _ = writeln!(out, "{}: the gateway's {flags}", self.label(&mode.mode));
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

impl Report {
    /// The figures as a Markdown table: one row per mode, one column per category and
    /// one for all cases. A cell gives the accuracy and the share of valid answers (for
    /// `irrelevance`, the accuracy is the share of answers without a call), and "n of N"
    /// where the category ran on n of its N cases. Where a mode ran `simple_python`,
    /// `simple_java` and `simple_javascript`, a column [`BFCL_SIMPLE`] gives their
    /// unweighted mean ([`ModeReport::bfcl_simple`]).
    pub fn markdown(&self) -> String {
        let mut categories: Vec<&str> = Vec::new();
        for mode in &self.modes {
            for (name, _) in &mode.categories {
                if !categories.contains(&name.as_str()) {
                    categories.push(name);
                }
            }
        }
        categories.sort_unstable();
        let simple = self.modes.iter().any(|m| m.bfcl_simple().is_some());
        let mut out = String::from("| mode | server |");
        for name in &categories {
            let _ = write!(out, " {name} |");
        }
        if simple {
            let _ = write!(out, " {BFCL_SIMPLE} |");
        }
        out.push_str(" all |\n|---|---|");
        for _ in &categories {
            out.push_str("---|");
        }
        if simple {
            out.push_str("---|");
        }
        out.push_str("---|\n");
        for mode in &self.modes {
            let server = self.servers.get(&mode.mode).map_or("", String::as_str);
            let _ = write!(
                out,
                "| {} | {} |",
                self.label(&mode.mode),
                server.replace('|', "/")
            );
            for name in &categories {
                let cell = mode
                    .categories
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or_else(String::new, |(n, s)| self.cell(n, s));
                let _ = write!(out, " {cell} |");
            }
            if simple {
                match mode.bfcl_simple() {
                    Some(mean) => {
                        let _ = write!(out, " {:.1} % |", mean * 100.0);
                    }
                    None => out.push_str("  |"),
                }
            }
            let _ = writeln!(
                out,
                " {:.1} % ({:.1} % valid), {} cases |",
                mode.all.accuracy() * 100.0,
                mode.all.valid_share() * 100.0,
                mode.all.cases
            );
        }
        out
    }

    fn cell(&self, category: &str, s: &Summary) -> String {
        let mut cell = if super::case::wants_no_call(category) {
            format!("{:.1} % no call", s.accuracy() * 100.0)
        } else {
            format!(
                "{:.1} % ({:.1} % valid)",
                s.accuracy() * 100.0,
                s.valid_share() * 100.0
            )
        };
        match self.available.get(category) {
            Some(&all) if s.cases < all => {
                let _ = write!(cell, ", {} of {all}", s.cases);
            }
            _ => {}
        }
        if s.failed > 0 {
            let _ = write!(cell, ", {} failed", s.failed);
        }
        cell
    }
}

fn line(out: &mut String, name: &str, s: &Summary) {
    let _ = write!(
        out,
        "{:<24} {:>6} {:>8.1}% {:>6.1}% {:>7.1}% {:>8} {:>8} {:>10.0} {:>7.1}",
        name,
        s.cases,
        s.accuracy() * 100.0,
        s.valid_share() * 100.0,
        s.no_call_share() * 100.0,
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

#[cfg(test)]
mod tests {
    use super::{Report, BFCL_SIMPLE};
    use crate::eval::CaseOutcome;

    fn outcome(mode: &str, category: &str, n: usize, correct: bool) -> CaseOutcome {
        CaseOutcome {
            mode: mode.into(),
            id: format!("{category}_{n}"),
            category: category.into(),
            correct,
            valid: true,
            no_call: false,
            latency_ms: 1,
            prompt_tokens: 1,
            completion_tokens: 1,
            calls: Vec::new(),
            answer: String::new(),
            endpoint_failed: false,
            error: None,
            call_odds: None,
        }
    }

    #[test]
    fn bfcl_simple_is_the_unweighted_mean_of_the_three_languages() {
        let mut outcomes = Vec::new();
        for (mode, categories) in [
            (
                "text",
                &["simple_python", "simple_java", "simple_javascript"][..],
            ),
            ("grammar", &["simple_python", "simple_java"][..]),
        ] {
            for category in categories {
                // Python 3 of 4 right, Java 1 of 2, JavaScript 1 of 1.
                let (cases, right) = match *category {
                    "simple_python" => (4, 3),
                    "simple_java" => (2, 1),
                    _ => (1, 1),
                };
                for n in 0..cases {
                    outcomes.push(outcome(mode, category, n, n < right));
                }
            }
        }
        let report = Report::new(
            &["text".into(), "grammar".into()],
            outcomes,
            Vec::new(),
            false,
        );
        // (75 + 50 + 100) / 3, not the pooled 5 of 7.
        let mean = report.modes[0].bfcl_simple().unwrap();
        assert!((mean - 0.75).abs() < 1e-12);
        assert_eq!(report.modes[1].bfcl_simple(), None);
        let json = report.to_json();
        assert_eq!(json["modes"]["text"]["bfcl_simple"], 0.75);
        assert!(json["modes"]["grammar"].get("bfcl_simple").is_none());
        let markdown = report.markdown();
        let mut lines = markdown.lines();
        assert!(lines
            .next()
            .unwrap()
            .contains(&format!(" {BFCL_SIMPLE} | all |")));
        assert_eq!(lines.next().unwrap(), "|---|---|---|---|---|---|---|");
        assert!(lines
            .next()
            .unwrap()
            .contains("| 75.0 % | 71.4 % (100.0 % valid), 7 cases |"));
        assert!(lines.next().unwrap().contains(" |  | 66.7 % "));
        assert!(report.table().contains(&format!("  {BFCL_SIMPLE}: 75.0%")));
    }
}
