//! tokio transport (in progress).
