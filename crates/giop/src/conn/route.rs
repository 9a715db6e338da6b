//! Where a client's calls go: the routing decisions every client makes
//! in one place.
//!
//! - [`version_for`]: the GIOP version spoken to an IIOP profile.

use crate::header::Version;
use crate::ior::IiopProfile;

/// The GIOP version to speak to profile `p`: the `configured` one when
/// the user chose one, else the profile's own, capped at 1.2 (the
/// highest GIOP there is; a profile may announce a later IIOP minor). A
/// corbaloc without `1.2@` makes a 1.0 profile, as every ORB reads it.
pub fn version_for(p: &IiopProfile, configured: Option<Version>) -> Version {
    configured.unwrap_or(Version {
        major: 1,
        minor: p.version.minor.min(2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(minor: u8) -> IiopProfile {
        let mut p = IiopProfile::new("h", 2809, &b"K"[..]);
        p.version = Version { major: 1, minor };
        p
    }

    #[test]
    fn the_version_is_the_configured_one_else_the_profiles_capped_at_1_2() {
        assert_eq!(version_for(&profile(0), None), Version::V1_0);
        assert_eq!(version_for(&profile(1), None), Version::V1_1);
        assert_eq!(version_for(&profile(2), None), Version::V1_2);
        assert_eq!(version_for(&profile(3), None), Version::V1_2);
        assert_eq!(version_for(&profile(0), Some(Version::V1_2)), Version::V1_2);
        assert_eq!(version_for(&profile(3), Some(Version::V1_1)), Version::V1_1);
    }
}
