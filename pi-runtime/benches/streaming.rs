//! Streaming benchmark (filled in below).

fn main() {}
