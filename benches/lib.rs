//! Shared payload builders for the criterion benches in this package.
