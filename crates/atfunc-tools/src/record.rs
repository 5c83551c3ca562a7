//! Recording calls as JSON Lines, and replaying a recording without running anything.

use super::panics::call_guarded;
use super::toolbox::{BuildError, CallContext, ToolBox, ToolError};
use async_trait::async_trait;
use atfunc::interface::Interface;
use atfunc::messages::qualified;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// One recorded call: a line of a recording.
///
/// ```text
/// {"call_id":"call_1","toolbox":"weather","function":"get_temp","args":{"location":"Paris"},"result":{"temp":21}}
/// {"call_id":"call_2","toolbox":"weather","function":"get_temp","args":{},"error":"..."}
/// {"call_id":"call_3","toolbox":"weather","function":"show","args":{},"result":"shown","elements":[{"type":"card"}]}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedCall {
    /// The call's id.
    pub call_id: String,
    /// The box that ran it.
    pub toolbox: String,
    /// The function, as the box names it.
    pub function: String,
    /// The arguments.
    pub args: Map<String, Json>,
    /// What it returned, or the error message.
    #[serde(flatten)]
    pub outcome: RecordedOutcome,
    /// The elements it showed the client (see [`CallContext::add_element`]); left out of a
    /// line when there are none, so recordings without them read as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elements: Vec<Json>,
}

/// How a recorded call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedOutcome {
    /// It returned this value.
    Result(Json),
    /// It failed with this message.
    Error(String),
}

/// Writes every call to the inner box and its outcome as one JSON line to a writer, then
/// returns the outcome unchanged. A panic in the inner box is recorded (and returned) as
/// an error.
pub struct Recording<B> {
    inner: B,
    sink: Mutex<Box<dyn Write + Send>>,
    write_errors: AtomicU64,
}

impl<B: ToolBox> Recording<B> {
    /// Wraps `inner`, writing to `sink`.
    pub fn new(inner: B, sink: impl Write + Send + 'static) -> Recording<B> {
        Recording {
            inner,
            sink: Mutex::new(Box::new(sink)),
            write_errors: AtomicU64::new(0),
        }
    }

    /// How many lines could not be written. A failing sink never fails the call itself.
    pub fn write_errors(&self) -> u64 {
        self.write_errors.load(Ordering::Relaxed)
    }

    fn write(&self, record: &RecordedCall) {
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        let written = serde_json::to_writer(&mut *sink, record)
            .map_err(std::io::Error::from)
            .and_then(|()| sink.write_all(b"\n"))
            .and_then(|()| sink.flush());
        if written.is_err() {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[async_trait]
impl<B: ToolBox> ToolBox for Recording<B> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn interfaces(&self, ctx: &CallContext) -> Vec<Interface> {
        self.inner.interfaces(ctx)
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        let kept = args.clone();
        // Elements an outer wrapper added already are not this call's.
        let before = ctx.element_count();
        let result = call_guarded(&self.inner, function, args, ctx).await;
        self.write(&RecordedCall {
            call_id: ctx.call_id.clone(),
            toolbox: self.inner.name().to_owned(),
            function: function.to_owned(),
            args: kept,
            outcome: match &result {
                Ok(value) => RecordedOutcome::Result(value.clone()),
                Err(error) => RecordedOutcome::Error(error.model_message()),
            },
            elements: ctx.elements_after(before),
        });
        result
    }

    async fn close(&self) -> Result<(), ToolError> {
        self.inner.close().await
    }

    fn build_errors(&self) -> Vec<BuildError> {
        self.inner.build_errors()
    }
}

/// Why a recording could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The reader failed.
    #[error("cannot read the recording: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not a recorded call.
    #[error("line {line} of the recording is not a recorded call: {source}")]
    Line {
        /// The line number, from 1.
        line: usize,
        /// What is wrong with it.
        source: serde_json::Error,
    },
}

/// Answers calls from a recording without running anything: a call is matched to a
/// recorded call of the same function with equal arguments, which are used up in order
/// (the last one answers again once all are used), and shows the client the elements that
/// call showed. A call the recording does not hold ends with [`ToolError::NotRecorded`].
#[derive(Debug)]
pub struct Replay {
    name: String,
    interfaces: Vec<Interface>,
    /// Each recorded call and whether it has answered already.
    entries: Mutex<Vec<(RecordedCall, bool)>>,
}

impl Replay {
    /// A replay box named `name`, offering `interfaces` (usually the recorded box's), that
    /// answers from the `records` of its box.
    pub fn new(
        name: impl Into<String>,
        interfaces: Vec<Interface>,
        records: Vec<RecordedCall>,
    ) -> Replay {
        let name = name.into();
        let entries = records
            .into_iter()
            .filter(|r| r.toolbox == name)
            .map(|r| (r, false))
            .collect();
        Replay {
            name,
            interfaces,
            entries: Mutex::new(entries),
        }
    }

    /// Reads a recording written by [`Recording`]; blank lines are skipped.
    pub fn from_jsonl(
        name: impl Into<String>,
        interfaces: Vec<Interface>,
        reader: impl BufRead,
    ) -> Result<Replay, ReplayError> {
        let mut records = Vec::new();
        for (i, line) in reader.lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let record = serde_json::from_str(&line).map_err(|source| ReplayError::Line {
                line: i + 1,
                source,
            })?;
            records.push(record);
        }
        Ok(Replay::new(name, interfaces, records))
    }
}

#[async_trait]
impl ToolBox for Replay {
    fn name(&self) -> &str {
        &self.name
    }

    fn interfaces(&self, _ctx: &CallContext) -> Vec<Interface> {
        self.interfaces.clone()
    }

    async fn call(
        &self,
        function: &str,
        args: Map<String, Json>,
        ctx: &CallContext,
    ) -> Result<Json, ToolError> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let matches = |r: &RecordedCall| r.function == function && r.args == args;
        let unused = entries.iter().position(|(r, used)| !used && matches(r));
        let chosen = unused.or_else(|| entries.iter().rposition(|(r, _)| matches(r)));
        let Some((record, used)) = chosen.and_then(|i| entries.get_mut(i)) else {
            return Err(ToolError::NotRecorded {
                name: qualified(&self.name, function),
                args: Json::Object(args).to_string(),
            });
        };
        *used = true;
        for element in &record.elements {
            ctx.add_element(element.clone());
        }
        match &record.outcome {
            RecordedOutcome::Result(value) => Ok(value.clone()),
            RecordedOutcome::Error(message) => Err(ToolError::Failed(message.clone())),
        }
    }
}
