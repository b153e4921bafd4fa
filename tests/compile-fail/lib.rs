//! Nothing here: the package exists for its `ui` test (see `ui.rs`).
