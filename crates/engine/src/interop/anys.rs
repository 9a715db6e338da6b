//! The suite's `any` and user-exception checks (bench.idl's ANY AND USER
//! EXCEPTIONS): `echo_any` of every [`samples`] value — basic types,
//! strings, a sequence, a struct, an alias, an enum, unions, an any in an
//! any, TypeCodes themselves (recursive, a repeated one indirected, with
//! member names, an exception's) and an exception — each of which must
//! come back with an equal TypeCode (names included) and an equal value;
//! an exception inside an any sent both ways ORBs write it (with its
//! repository id, the common reading; members only, as omniORB before
//! 4.3); and `raise_user`, whose BenchError must arrive as a
//! USER_EXCEPTION decoded exactly. A failure shows the bytes both ways.

use bytes::BytesMut;
use iiop_bench_idl::bench::anys::{samples, AnySample, BenchErrorData, BENCH_ERROR_ID};
use iiop_bench_idl::client::{BenchClient, BenchError};
use iiop_cdr::typecode::TCKind;
use iiop_cdr::value::{exception_id_in_any, ValueScope};
use iiop_cdr::{Any, ByteOrder, CdrError, Reader, TypeCode, Value, Writer};
use iiop_giop::message::Body;
use iiop_giop::Version;
use iiop_transport::client::ClientError;

use super::check::{describe, hex, Check, Verdict, PADDING_RULE};

/// Bytes of a request or reply shown in a failure's detail.
const HEX_MAX: usize = 320;

/// Detail octets of the larger `raise_user` check.
pub const LARGE_DETAIL: u32 = 3000;

/// What one check does.
enum Case {
    /// `echo_any` of this sample.
    Echo(AnySample),
    /// `echo_any` of an exception written as its members alone.
    BareException(AnySample),
    /// `raise_user(code, reason, detail_len)`.
    Raise {
        name: &'static str,
        code: i32,
        reason: &'static str,
        detail: u32,
    },
}

impl Case {
    fn name(&self) -> &'static str {
        match self {
            Case::Echo(s) => s.name,
            Case::BareException(_) => "any: exception Bench::BenchError, members only (no id)",
            Case::Raise { name, .. } => name,
        }
    }
}

fn cases() -> Vec<Case> {
    let mut v: Vec<Case> = samples().into_iter().map(Case::Echo).collect();
    let exception = samples()
        .into_iter()
        .find(|s| s.any.tc.kind() == TCKind::tk_except)
        .expect("an exception sample");
    v.push(Case::BareException(exception));
    v.push(Case::Raise {
        name: "user exception: raise_user -> BenchError",
        code: 7,
        reason: "raised on demand",
        detail: 16,
    });
    v.push(Case::Raise {
        name: "user exception: raise_user -> BenchError, 3000 octets of detail",
        code: -1,
        reason: "a larger exception",
        detail: LARGE_DETAIL,
    });
    v
}

/// How many `any` and user-exception checks there are.
pub fn count() -> usize {
    cases().len()
}

fn any_tc() -> TypeCode {
    TypeCode::basic(TCKind::tk_any)
}

/// An any's bytes, as an argument (its exception with or without id).
fn any_args(a: &Any, bare: bool, w: &mut Writer<'_>) -> Result<(), CdrError> {
    let mut scope = ValueScope {
        bare_exceptions_in_any: bare,
        ..ValueScope::default()
    };
    Value::Any(Box::new(a.clone())).encode_in(&any_tc(), w, &mut scope)
}

/// What `a` reads back as through our own codec: the value a peer's
/// echo must equal (representations are the decoder's).
fn canonical(a: &Any) -> Result<Any, String> {
    let mut buf = BytesMut::new();
    any_args(a, false, &mut Writer::new(&mut buf, ByteOrder::NATIVE))
        .map_err(|e| format!("not encodable: {e}"))?;
    match Value::decode(&any_tc(), &mut Reader::new(&buf, ByteOrder::NATIVE)) {
        Ok(Value::Any(b)) => Ok(*b),
        Ok(other) => Err(format!("decoded as {other:?}")),
        Err(e) => Err(format!("our own bytes do not decode: {e}")),
    }
}

/// Whether the exception in the any of `body` came with its repository
/// id: `None` when the any holds no exception or does not decode.
fn exception_form(c: &BenchClient, body: &Body) -> Option<&'static str> {
    let mut r = body.reader(c.options());
    let tc = TypeCode::decode(&mut r).ok()?;
    (tc.kind() == TCKind::tk_except).then(|| {
        if exception_id_in_any(&tc, &r) {
            "with its repository id"
        } else {
            "as its members only (no repository id)"
        }
    })
}

/// The verdict on an any that came back.
fn judge_any(want: &Any, got: &Any) -> Result<(), String> {
    if !got.tc.equal(&want.tc) {
        let how = if got.tc.equivalent(&want.tc) {
            "an equivalent TypeCode that is not equal (names or repository ids changed)"
        } else {
            "a different TypeCode"
        };
        return Err(format!("{how}: {:?}, sent {:?}", got.tc, want.tc));
    }
    if let (Value::TypeCode(g), Value::TypeCode(w)) = (&got.value, &want.value) {
        if !g.equal(w) {
            let how = if g.equivalent(w) {
                "equivalent but not equal (names or repository ids changed)"
            } else {
                "different"
            };
            return Err(format!(
                "the TypeCode inside came back {how}: {g:?}, sent {w:?}"
            ));
        }
    }
    if got.value != want.value {
        return Err(format!("value {:?}, sent {:?}", got.value, want.value));
    }
    Ok(())
}

async fn echo(c: &BenchClient, s: &AnySample, bare: bool) -> Result<(Verdict, String), String> {
    let want = canonical(&s.any)?;
    let body = c
        .call("echo_any", |w| any_args(&s.any, bare, w))
        .await
        .map_err(|e| describe(&e))?;
    let back = || format!("reply body {}", hex(&body.bytes, HEX_MAX));
    let mut r = body.reader(c.options());
    let got = match Value::decode(&any_tc(), &mut r) {
        Ok(Value::Any(a)) => *a,
        Ok(other) => return Err(format!("decoded as {other:?}; {}", back())),
        Err(e) => return Err(format!("the reply does not decode: {e}; {}", back())),
    };
    if !r.only_padding_left() {
        return Err(format!(
            "{} bytes after the result ({PADDING_RULE}); {}",
            r.remaining(),
            back()
        ));
    }
    judge_any(&want, &got).map_err(|e| format!("{e}; {}", back()))?;
    let detail = match exception_form(c, &body) {
        Some(form) => format!("equal; the exception came back {form}"),
        None => "equal TypeCode and value".into(),
    };
    Ok((Verdict::Pass, detail))
}

async fn raise(
    c: &BenchClient,
    code: i32,
    reason: &str,
    n: u32,
) -> Result<(Verdict, String), String> {
    let r = c
        .call("raise_user", |w| {
            w.write_i32(code);
            w.write_string(reason)?;
            w.write_u32(n);
            Ok(())
        })
        .await;
    let body = match r {
        Ok(b) => {
            return Err(format!(
                "answered NO_EXCEPTION, want USER_EXCEPTION {BENCH_ERROR_ID}; reply body {}",
                hex(&b.bytes, HEX_MAX)
            ))
        }
        Err(BenchError::Call(ClientError::User { repo_id, body })) if repo_id == BENCH_ERROR_ID => {
            body
        }
        Err(e) => return Err(describe(&e)),
    };
    let back = || format!("reply body {}", hex(&body.bytes, HEX_MAX));
    let mut rd = body.reader(c.options());
    let got = rd
        .read_string()
        .and_then(|_| BenchErrorData::read_members(&mut rd))
        .map_err(|e| format!("BenchError does not decode: {e}; {}", back()))?;
    if !rd.only_padding_left() {
        return Err(format!(
            "{} bytes after the exception ({PADDING_RULE}); {}",
            rd.remaining(),
            back()
        ));
    }
    let want = BenchErrorData::raised(code, reason, n);
    if got != want {
        return Err(format!(
            "BenchError {{ code {}, reason {:?}, {} octets of detail }}, want {{ code {code}, \
             reason {reason:?}, {n} octets i mod 256 }}; {}",
            got.code,
            got.reason,
            got.detail.len(),
            back()
        ));
    }
    Ok((
        Verdict::Pass,
        format!("USER_EXCEPTION {BENCH_ERROR_ID}, {n} octets of detail, decoded exactly"),
    ))
}

/// The request arguments as bytes (from an 8-aligned start, as sent in
/// GIOP 1.2), for a failure's detail.
fn request_hex(case: &Case, order: ByteOrder) -> String {
    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, order);
    let r = match case {
        Case::Echo(s) => any_args(&s.any, false, &mut w),
        Case::BareException(s) => any_args(&s.any, true, &mut w),
        Case::Raise {
            code,
            reason,
            detail,
            ..
        } => (|| {
            w.write_i32(*code);
            w.write_string(reason)?;
            w.write_u32(*detail);
            Ok(())
        })(),
    };
    match r {
        Ok(()) => hex(&buf, HEX_MAX),
        Err(e) => format!("(not encodable: {e})"),
    }
}

/// Whether a call failed because the server has no such operation.
fn not_implemented(e: &BenchError) -> bool {
    matches!(e, BenchError::Call(ClientError::System(x))
        if matches!(x.name(), "BAD_OPERATION" | "NO_IMPLEMENT"))
}

/// Why every check here is a skip on this server (it does not implement
/// `echo_any`), or `None` to run them: one `echo_any` of a long tells.
pub async fn probe(c: &BenchClient) -> Option<String> {
    let a = Any {
        tc: TypeCode::long(),
        value: Value::Long(1),
    };
    match c.call("echo_any", |w| any_args(&a, false, w)).await {
        Err(e) if not_implemented(&e) => Some(format!(
            "the server does not implement bench.idl's echo_any and raise_user ({})",
            describe(&e)
        )),
        _ => None,
    }
}

/// A peer's known defect that check `name` runs into, by its ORB
/// (TAG_ORB_TYPE name).
fn known_defect(orb: Option<&str>, name: &str) -> Option<&'static str> {
    match (orb?, name) {
        ("omniORB", "any: exception Bench::BenchError") => Some(
            "omniORB before 4.3 reads an exception inside an any as its members alone, so the \
             repository id that the common reading of the spec (and omniORB 4.3, JacORB and we) \
             writes first is taken for the first member; tracker: omniORB 4.3's configuration \
             parameter exceptionIdInAny (default on) changed the encoding; earlier versions \
             have no entry",
        ),
        _ => None,
    }
}

/// A check that could not run: `why` (a connect failure) as its failure.
pub fn not_run(index: usize, why: String) -> Check {
    Check::new(cases()[index].name(), "echo").set(Verdict::Fail, why)
}

/// Check number `index` on connection `c` (GIOP `version`, the host's
/// byte order) to a server of ORB `orb`; a skip for `missing`'s reason
/// if set (from [`probe`]). A check the ORB is known to fail is a skip
/// naming its defect, with the bytes; one it passes is a pass.
pub async fn check(
    c: &BenchClient,
    version: Version,
    index: usize,
    missing: Option<&str>,
    orb: Option<&str>,
) -> Check {
    let case = &cases()[index];
    let mut k = Check::new(
        case.name(),
        if matches!(case, Case::Raise { .. }) {
            "twoway"
        } else {
            "echo"
        },
    );
    k.ty = match case {
        Case::Raise { .. } => "exception".into(),
        _ => "any".into(),
    };
    k.giop = version.to_string();
    k.calls = 1;
    if let Some(why) = missing {
        return k.set(Verdict::Skip, why);
    }
    if let Case::Echo(s) = case {
        if s.wide && (version < Version::V1_2 || c.options().wchar_set.is_none()) {
            k.calls = 0;
            return k.set(
                Verdict::Skip,
                format!(
                    "a wstring needs GIOP 1.2 and a negotiated wchar code set (GIOP {version}, \
                     wchar code set {:?})",
                    c.options().wchar_set
                ),
            );
        }
    }
    let request = || request_hex(case, ByteOrder::NATIVE);
    let t = std::time::Instant::now();
    let r = match case {
        Case::Echo(s) => echo(c, s, false).await,
        Case::BareException(s) => echo(c, s, true).await,
        Case::Raise {
            code,
            reason,
            detail,
            ..
        } => raise(c, *code, reason, *detail).await,
    };
    k.seconds = t.elapsed().as_secs_f64();
    match (r, known_defect(orb, case.name())) {
        (Ok((v, d)), _) => k.set(v, d),
        (Err(e), Some(why)) => k.set(
            Verdict::Skip,
            format!("known defect: {why}; {e}; request arguments {}", request()),
        ),
        // Which encoding an exception in an any has is read two ways in
        // the field: a peer that reads only the other one is noted.
        (Err(e), None) if matches!(case, Case::BareException(_)) => k.set(
            Verdict::Note,
            format!(
                "the server reads an exception inside an any only with its repository id \
                 first (the common reading; omniORB before 4.3 writes members only): {e}; \
                 request arguments {}",
                request()
            ),
        ),
        (Err(e), None) => k.set(
            Verdict::Fail,
            format!("{e}; request arguments {}", request()),
        ),
    }
}
