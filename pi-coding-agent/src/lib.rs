//! pi coding agent (in progress).
