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
use iiop_transport::server::{arguments_end_body, Outcome};

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

/// `raise_user`'s arguments: (code, reason, detail length), decoded by
/// the typed skeleton or as dynamic values.
fn raise_args(typed: bool, body: &mut Reader<'_>) -> Result<(i32, String, u32), CdrError> {
    if typed {
        return Ok((body.read_i32()?, body.read_string()?, body.read_u32()?));
    }
    let t = tcs();
    let code = Value::decode(&TypeCode::long(), body)?;
    let reason = Value::decode(&t.string, body)?;
    let n = Value::decode(&TypeCode::ulong(), body)?;
    match (code, reason, n) {
        (Value::Long(c), Value::String(s), Value::ULong(n)) => Ok((c, s, n)),
        _ => unreachable!("values decode as their TypeCodes say"),
    }
}

/// The body did not decode, or bytes other than padding follow it.
fn end(body: &Reader<'_>) -> Result<(), CdrError> {
    if arguments_end_body(body) {
        Ok(())
    } else {
        Err(CdrError::TrailingData {
            offset: body.position(),
            remaining: body.remaining(),
        })
    }
}

/// The answer to `op` (`raise_user` or `echo_any`) from the typed
/// skeleton (`typed`) or the dynamic one; an error is the caller's
/// MARSHAL.
pub(super) fn dispatch(
    typed: bool,
    op: Op,
    body: &mut Reader<'_>,
    reply: &mut Writer<'_>,
) -> Result<Outcome, CdrError> {
    match op {
        Op::RaiseUser => {
            let (code, reason, n) = raise_args(typed, body)?;
            end(body)?;
            if n > DETAIL_MAX {
                return Ok(Outcome::System(SystemException::bad_param(
                    omg_minor(1),
                    Completion::No,
                )));
            }
            let e = BenchErrorData::raised(code, &reason, n);
            if typed {
                e.write(reply)?;
            } else {
                reply.write_string(BENCH_ERROR_ID)?;
                e.value().encode(&tcs().error, reply)?;
            }
            Ok(Outcome::UserException)
        }
        Op::EchoAny => {
            let t = tcs();
            // An exception inside goes back the way it came, with its
            // repository id or without (as omniORB before 4.3 writes it),
            // so either kind of client reads its own any back.
            let mut peek = body.clone();
            let bare = TypeCode::decode(&mut peek)
                .is_ok_and(|tc| tc.kind() == TCKind::tk_except && !exception_id_in_any(&tc, &peek));
            let v = Value::decode(&t.any, body)?;
            end(body)?;
            let mut scope = ValueScope {
                bare_exceptions_in_any: bare,
                ..ValueScope::default()
            };
            v.encode_in(&t.any, reply, &mut scope)?;
            Ok(Outcome::Reply)
        }
        other => unreachable!("{other:?} is neither raise_user nor echo_any"),
    }
}
