//! The reference server's `raise_user` and `echo_any` (bench.idl's ANY
//! AND USER EXCEPTIONS), in the typed skeleton ([`BenchErrorData`]) and
//! the dynamic one ([`Value`]s of `BenchError`'s TypeCode). `echo_any`
//! is one [`Value`] of type `any` in both: no IDL type describes what an
//! `any` holds, so even a static skeleton decodes it by its TypeCode.

use std::sync::OnceLock;

use iiop_cdr::typecode::TCKind;
use iiop_cdr::value::{exception_id_in_any, ValueScope};
use iiop_cdr::{CdrError, Reader, TypeCode, Value, Writer};
use iiop_giop::exception::{omg_minor, Completion};
use iiop_giop::SystemException;
use iiop_transport::server::{arguments_end_body, Dispatch, Outcome};

use super::{marshal_error, Skeleton};
use crate::bench::anys::{bench_error_typecode, BenchErrorData, BENCH_ERROR_ID, DETAIL_MAX};
use crate::bench::ops::Op;

struct Tcs {
    any: TypeCode,
    error: TypeCode,
    string: TypeCode,
}

fn tcs() -> &'static Tcs {
    static TCS: OnceLock<Tcs> = OnceLock::new();
    TCS.get_or_init(|| Tcs {
        any: TypeCode::basic(TCKind::tk_any),
        error: bench_error_typecode(),
        string: TypeCode::string(0),
    })
}

/// `raise_user`'s arguments: (code, reason, detail length).
fn raise_args(skeleton: Skeleton, body: &mut Reader<'_>) -> Result<(i32, String, u32), CdrError> {
    match skeleton {
        Skeleton::Typed => Ok((body.read_i32()?, body.read_string()?, body.read_u32()?)),
        Skeleton::Dynamic => {
            let t = tcs();
            let code = Value::decode(&TypeCode::long(), body)?;
            let reason = Value::decode(&t.string, body)?;
            let n = Value::decode(&TypeCode::ulong(), body)?;
            match (code, reason, n) {
                (Value::Long(c), Value::String(s), Value::ULong(n)) => Ok((c, s, n)),
                _ => unreachable!("values decode as their TypeCodes say"),
            }
        }
    }
}

/// The answer to `op` (`raise_user` or `echo_any`).
pub(super) fn dispatch(
    skeleton: Skeleton,
    op: Op,
    body: &mut Reader<'_>,
    reply: &mut Writer<'_>,
) -> Dispatch {
    match op {
        Op::RaiseUser => {
            let Ok((code, reason, n)) = raise_args(skeleton, body) else {
                return marshal_error();
            };
            if !arguments_end_body(body) {
                return marshal_error();
            }
            if n > DETAIL_MAX {
                return Dispatch::Done(Outcome::System(SystemException::bad_param(
                    omg_minor(1),
                    Completion::No,
                )));
            }
            let e = BenchErrorData::raised(code, &reason, n);
            let written = match skeleton {
                Skeleton::Typed => e.write(reply),
                Skeleton::Dynamic => reply
                    .write_string(BENCH_ERROR_ID)
                    .and_then(|_| e.value().encode(&tcs().error, reply)),
            };
            match written {
                Ok(()) => Dispatch::Done(Outcome::UserException),
                Err(_) => marshal_error(),
            }
        }
        Op::EchoAny => {
            let t = tcs();
            // An exception inside goes back the way it came, with its
            // repository id or without (as omniORB before 4.3 writes it),
            // so either kind of client reads its own any back.
            let mut peek = body.clone();
            let bare = TypeCode::decode(&mut peek)
                .is_ok_and(|tc| tc.kind() == TCKind::tk_except && !exception_id_in_any(&tc, &peek));
            let Ok(v) = Value::decode(&t.any, body) else {
                return marshal_error();
            };
            if !arguments_end_body(body) {
                return marshal_error();
            }
            let mut scope = ValueScope {
                bare_exceptions_in_any: bare,
                ..ValueScope::default()
            };
            match v.encode_in(&t.any, reply, &mut scope) {
                Ok(()) => Dispatch::Done(Outcome::Reply),
                Err(_) => marshal_error(),
            }
        }
        other => unreachable!("{other:?} is neither raise_user nor echo_any"),
    }
}
