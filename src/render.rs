//! Phase 2, render: interfaces as the text a model reads in its prompt.

use crate::interface::Interface;

/// Renders one interface in the atfunc line form.
pub fn render_interface(interface: &Interface, _separator: bool) -> String {
    format!("@{}( )\nDescription: {}\n", interface.qualified_name(), interface.description)
}
