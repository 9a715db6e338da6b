//! bench.idl's `Callback` object on the client side: what a client that
//! offers its connection for callbacks (bidirectional GIOP) serves there,
//! so that `call_back(cb, n)` makes the server call `cb->notify(n)` back
//! over that connection. `notify(n)` answers `n + 1` and is counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use iiop_cdr::{Reader, Writer};
use iiop_giop::{Completion, SystemException};
use iiop_transport::server::{
    handle_builtin, Dispatch, Handler, LocateOutcome, Outcome, RequestContext,
};

use crate::bench::ops::CALLBACK_ID;

/// The object key of our Callback object.
pub const CALLBACK_KEY: &[u8] = b"Callback";

/// Our Callback object: `notify(n)` returns `n + 1`; `locate` knows only
/// [`CALLBACK_KEY`]. Every `notify` is counted, and the first
/// [`RECORDED`] arguments are kept in order (a benchmark makes millions).
#[derive(Debug, Default)]
pub struct CallbackServant {
    calls: AtomicU64,
    seen: Mutex<Vec<i32>>,
}

/// How many `notify` arguments a [`CallbackServant`] keeps.
pub const RECORDED: usize = 64;

impl CallbackServant {
    /// `notify` calls answered so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// The arguments of the first [`RECORDED`] `notify` calls, in order.
    pub fn seen(&self) -> Vec<i32> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Handler for CallbackServant {
    fn locate(&self, object_key: &[u8]) -> LocateOutcome {
        if object_key == CALLBACK_KEY {
            LocateOutcome::Here
        } else {
            LocateOutcome::Unknown
        }
    }

    fn handle(
        &self,
        req: &RequestContext<'_>,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        if req.object_key != CALLBACK_KEY {
            return Dispatch::Done(Outcome::System(SystemException::unknown_object()));
        }
        if let Some(d) = handle_builtin(req, body, reply, &[CALLBACK_ID]) {
            return d;
        }
        if req.operation != "notify" {
            return Dispatch::Done(Outcome::System(SystemException::unknown_operation()));
        }
        let Ok(n) = body.read_i32() else {
            return Dispatch::Done(Outcome::System(SystemException::marshal(0, Completion::No)));
        };
        self.calls.fetch_add(1, Ordering::Relaxed);
        {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            if seen.len() < RECORDED {
                seen.push(n);
            }
        }
        reply.write_i32(n.wrapping_add(1));
        Dispatch::Done(Outcome::Reply)
    }
}
