//! The registry's statistics: how many calls were handled, per box and per function, and
//! how many of them failed.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// Call counts since the registry was made or its statistics were reset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Stats {
    /// Every call handled, refused ones included (one per result block).
    pub calls: u64,
    /// Calls that ended in an error, refused ones included.
    pub errors: u64,
    /// Calls refused as the model's mistake: an unknown function, arguments that do not
    /// bind (or that a typed tool could not deserialise), text that is not a call. They
    /// are not counted per box or function.
    pub refused: u64,
    /// Calls per tool box (`tools` for the control functions).
    pub toolboxes: BTreeMap<String, u64>,
    /// Calls and errors per function, by qualified name.
    pub functions: BTreeMap<String, FunctionStats>,
}

/// The counts of one function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FunctionStats {
    /// Calls that reached it.
    pub calls: u64,
    /// Of those, the ones that ended in an error.
    pub errors: u64,
}

/// The counts as calls come in, from any task.
#[derive(Default)]
pub(super) struct Tally {
    stats: Mutex<Stats>,
}

impl Tally {
    fn lock(&self) -> std::sync::MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A call refused before it reached a box.
    pub(super) fn refusal(&self) {
        let mut stats = self.lock();
        stats.calls += 1;
        stats.errors += 1;
        stats.refused += 1;
    }

    /// A call of `function` (qualified) in the box `toolbox`.
    pub(super) fn call(&self, toolbox: &str, function: String, failed: bool) {
        let mut stats = self.lock();
        stats.calls += 1;
        stats.errors += u64::from(failed);
        *stats.toolboxes.entry(toolbox.to_owned()).or_default() += 1;
        let entry = stats.functions.entry(function).or_default();
        entry.calls += 1;
        entry.errors += u64::from(failed);
    }

    pub(super) fn get(&self) -> Stats {
        self.lock().clone()
    }

    pub(super) fn reset(&self) {
        *self.lock() = Stats::default();
    }
}
