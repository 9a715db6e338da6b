//! CosNaming over our client: `NamingContext::resolve`, used to turn a
//! `corbaname:` reference (or any [`Target`]) into an IOR.

use iiop_cdr::{CdrError, Options, Writer};

use super::client::{Client, ClientError};
use iiop_giop::corbaloc::{NameComponent, Target};
use iiop_giop::ior::Ior;

/// `CosNaming::NamingContext::resolve(name)` on `naming`: the bound
/// object's IOR. NotFound and friends come back as
/// [`ClientError::User`] with their repository id.
pub async fn resolve_name(
    client: &Client,
    naming: &Ior,
    name: &[NameComponent],
) -> Result<Ior, ClientError> {
    let body = client
        .call(naming, "resolve", |w: &mut Writer<'_>| write_name(w, name))
        .await?;
    let mut r = body.reader(Options::default());
    Ior::decode(&mut r).map_err(|error| ClientError::Protocol {
        addr: String::new(),
        error: error.into(),
    })
}

/// Encode a `CosNaming::Name` (sequence of {string id; string kind}).
pub fn write_name(w: &mut Writer<'_>, name: &[NameComponent]) -> Result<(), CdrError> {
    w.write_len(name.len())?;
    for c in name {
        w.write_string(&c.id)?;
        w.write_string(&c.kind)?;
    }
    Ok(())
}

/// The IOR a [`Target`] denotes: an IOR as is, a corbaloc's IIOP profiles,
/// or a corbaname resolved through its naming context.
pub async fn resolve_target(client: &Client, target: &Target) -> Result<Ior, ClientError> {
    match target {
        Target::Ior(i) => Ok(i.clone()),
        Target::Corbaloc(c) => c.to_ior("").ok_or(ClientError::NoProfile),
        Target::Corbaname(c) => {
            let ctx = c
                .naming_context()
                .to_ior("")
                .ok_or(ClientError::NoProfile)?;
            let name = c.components().map_err(ClientError::Encode)?;
            if name.is_empty() {
                return Ok(ctx);
            }
            resolve_name(client, &ctx, &name).await
        }
    }
}
