//! What one answer sees of the registry, and what it may change: the functions it is
//! offered ([`View`]) and its own settings ([`Conversation`]).
//!
//! Both are taken from the registry when the answer starts and hold nothing of it, so the
//! control functions answer from them alone and the turn runs calls against them.

use atfunc::bind::Catalog;
use atfunc::format::DEFAULT_TRUNCATE_LENGTH;
use std::sync::atomic::{AtomicUsize, Ordering};
use unicase::UniCase;

/// What a model may change about how its results come back, kept per conversation.
///
/// A model's `@tools.set_truncate_length(n)` changes the settings of the answer it is
/// writing (and, when the caller carries them on with
/// [`ResponseStream::with_settings`](super::ResponseStream::with_settings), of its later
/// answers), never the [`Registry`](super::Registry)'s defaults that every other
/// conversation starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// The length results are cut at, in characters (at least 1).
    pub truncate_length: usize,
}

impl Settings {
    /// The settings with [`truncate_length`](Settings::truncate_length) set.
    pub fn with_truncate_length(mut self, length: usize) -> Settings {
        self.truncate_length = length;
        self
    }
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            truncate_length: DEFAULT_TRUNCATE_LENGTH,
        }
    }
}

/// One conversation's settings while its answer runs; calls of one answer may run at once,
/// so the settings are shared between them.
pub(super) struct Conversation {
    truncate: AtomicUsize,
}

impl Conversation {
    pub(super) fn new(settings: &Settings) -> Conversation {
        Conversation {
            truncate: AtomicUsize::new(settings.truncate_length.max(1)),
        }
    }

    pub(super) fn settings(&self) -> Settings {
        Settings {
            truncate_length: self.truncate_length(),
        }
    }

    pub(super) fn truncate_length(&self) -> usize {
        self.truncate.load(Ordering::Relaxed)
    }

    /// What `tools.set_truncate_length` changes.
    pub(super) fn set_truncate_length(&self, length: usize) {
        self.truncate.store(length.max(1), Ordering::Relaxed);
    }
}

/// The functions one answer is offered: the catalog its calls bind against, and the box
/// each function belongs to.
pub(super) struct View {
    catalog: Catalog,
    /// The registered boxes, then `tools` while a control function is registered.
    toolbox_names: Vec<String>,
    /// Parallel to `catalog.interfaces()`: where the function's box stands in
    /// `toolbox_names`.
    owners: Vec<usize>,
}

impl View {
    /// `owners` holds an index into `toolbox_names` for each interface of `catalog`.
    pub(super) fn new(catalog: Catalog, toolbox_names: Vec<String>, owners: Vec<usize>) -> View {
        debug_assert_eq!(catalog.len(), owners.len());
        View {
            catalog,
            toolbox_names,
            owners,
        }
    }

    /// The interfaces calls bind against.
    pub(super) fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The names of the boxes, `tools` included while a control function is registered.
    pub(super) fn toolbox_names(&self) -> &[String] {
        &self.toolbox_names
    }

    /// The name of the box that offers the function at `index` of the catalog.
    pub(super) fn owner(&self, index: usize) -> Option<&str> {
        let box_index = *self.owners.get(index)?;
        self.toolbox_names.get(box_index).map(String::as_str)
    }

    fn same_name(&self, a: &str, b: &str) -> bool {
        if self.catalog.case_sensitive() {
            a == b
        } else {
            UniCase::new(a) == UniCase::new(b)
        }
    }

    /// The qualified names of every function, or of those of one box; `None` for a box
    /// that is not registered.
    pub(super) fn function_names(&self, toolbox: Option<&str>) -> Option<Vec<String>> {
        let wanted = match toolbox {
            Some(wanted) => Some(
                self.toolbox_names
                    .iter()
                    .position(|name| self.same_name(name, wanted))?,
            ),
            None => None,
        };
        let names = self
            .catalog
            .interfaces()
            .iter()
            .zip(&self.owners)
            .filter(|(_, owner)| wanted.is_none_or(|wanted| **owner == wanted))
            .map(|(interface, _)| interface.qualified_name())
            .collect();
        Some(names)
    }
}
