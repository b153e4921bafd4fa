//! Fault injection and soak runs of the agent loop (filled in below).
