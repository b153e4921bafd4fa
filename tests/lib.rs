//! Intentionally empty: this package only hosts workspace-level tests.
