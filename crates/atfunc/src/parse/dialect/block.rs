//! What a dialect gives the reader: whether a call block opens at an offset, and the
//! scanner of that block. Each dialect's file implements these; the reader runs them. They
//! live apart from the reader so that the dialects, which the reader reaches through
//! `auto`, never import the reader back.

use super::scan::{BuildError, Built, Input, Step};
use super::Dialect;

/// A dialect's scanner for one call block, from its opening marker on.
pub(super) trait BlockScan: std::fmt::Debug + Send + Sync {
    /// Scans from `*pos` as far as the bytes held go, leaving `*pos` where to resume.
    fn scan(&mut self, input: &Input<'_>, pos: &mut u64, max_depth: usize) -> Step;
    /// Reads the complete block `start..end` into its calls.
    fn build(&self, input: &Input<'_>, start: u64, end: u64) -> Result<Vec<Built>, BuildError>;
    /// The dialect the block belongs to.
    fn dialect(&self) -> Dialect;
    /// What the block still waits for, for an unterminated block's error.
    fn awaits(&self) -> &'static str;
    /// After a complete block: the scanner of the next call when the block was one link of
    /// a chain (Llama 3's `;`), and where it resumes. Each link is a block of its own, so
    /// that its call is handed out as soon as it is complete and only one link is held.
    fn chained(&mut self) -> Option<(Box<dyn BlockScan>, u64)> {
        None
    }
    /// Where the call proper starts when the block opened at a lead-in (a Markdown fence
    /// around an untagged call). The lead-in, and whatever the block holds past
    /// [`call_end`](Self::call_end), go with the calls only when they are read and the
    /// block holds more than the call (its closing fence); otherwise the reader gives the
    /// lead-in back as text, and a malformed span is the call's alone. `None`: the whole
    /// block is the call's.
    fn lead(&self) -> Option<u64> {
        None
    }
    /// For a block with a [`lead`](Self::lead): where the call proper ends, once read.
    fn call_end(&self) -> Option<u64> {
        None
    }
    /// Whether the block has no marker of its own (a bare JSON call object, a Python list
    /// of calls): it is a call only where the answer holds nothing but calls
    /// (`untagged.rs`).
    fn untagged(&self) -> bool {
        false
    }
}

/// Whether a call block opens at an offset.
pub(super) enum Opens {
    /// It does; its scanner resumes at `from`.
    Yes {
        block: Box<dyn BlockScan>,
        from: u64,
    },
    No,
    /// The bytes held end before it is clear.
    Need,
}

/// The scanner of a block a dialect opens, boxed.
pub(super) fn opened(block: impl BlockScan + 'static, from: u64) -> Opens {
    Opens::Yes {
        block: Box::new(block),
        from,
    }
}
