//! GIOP 1.0, 1.1 and 1.2 over TCP (IIOP): pure message types and codec
//! (no I/O, no clock), IOR and corbaloc references, and one tokio
//! transport module for clients and servers.
