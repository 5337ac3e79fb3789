//! The typed values that settings parse into, once, while the configuration loads (`config.rs`):
//! a bad value is refused there with an error naming its setting, and nothing later parses a
//! setting's text again. Lists are comma-separated with blanks ignored; an empty address means
//! "none".

use crate::cert_key::CertKeyCipher;
use crate::secret::Secret;
use anyhow::{Context, bail};
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::net::SocketAddr;

/// A role one `aqs serve` process can run. A single node runs all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `/queue/v1`: publish, consume, ack… plus the sweeper and push dispatcher.
    Data,
    /// `/api/v1`: members, queues, tokens; writes the Redis projection.
    Control,
    /// `/`: the web console.
    Console,
}

impl Role {
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "data" => Some(Self::Data),
            "control" => Some(Self::Control),
            "console" => Some(Self::Console),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Data => "data",
            Self::Control => "control",
            Self::Console => "console",
        }
    }
}

/// The roles a process runs (`AQS_ROLES`, `aqs serve --roles`): at least one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roles(Vec<Role>);

impl Roles {
    pub fn all() -> Self {
        Self(vec![Role::Data, Role::Control, Role::Console])
    }

    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let roles = split(text)
            .map(|r| Role::parse(r).with_context(|| format!("unknown role {r:?}; use data, control or console")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if roles.is_empty() {
            bail!("no role given; use data, control or console");
        }
        Ok(Self(roles))
    }

    pub fn runs(&self, role: Role) -> bool {
        self.0.contains(&role)
    }

    pub fn as_slice(&self) -> &[Role] {
        &self.0
    }
}

impl fmt::Display for Roles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|r| r.as_str()).collect();
        f.write_str(&names.join(","))
    }
}

impl<'de> Deserialize<'de> for Roles {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(|err| serde::de::Error::custom(format!("{err:#}")))
    }
}

fn split(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|item| !item.is_empty())
}

fn invalid<E: serde::de::Error>(err: impl fmt::Display) -> E {
    E::custom(err)
}

/// A comma-separated list of names or URLs.
pub fn list<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    Ok(split(&String::deserialize(deserializer)?).map(str::to_owned).collect())
}

/// A comma-separated list of e-mail addresses, compared in lower case.
pub fn emails<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    Ok(split(&String::deserialize(deserializer)?).map(str::to_lowercase).collect())
}

/// A comma-separated list of secrets (Redis URLs carry passwords).
pub fn secrets<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Secret>, D::Error> {
    Ok(split(Secret::deserialize(deserializer)?.expose()).map(Secret::new).collect())
}

/// A comma-separated list of `ip:port`.
pub fn addresses<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<SocketAddr>, D::Error> {
    split(&String::deserialize(deserializer)?).map(address).collect::<anyhow::Result<_>>().map_err(invalid)
}

/// An `ip:port`, or empty for none.
pub fn optional_address<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<SocketAddr>, D::Error> {
    let text = String::deserialize(deserializer)?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    address(text).map(Some).map_err(invalid)
}

fn address(text: &str) -> anyhow::Result<SocketAddr> {
    text.parse().with_context(|| format!("{text:?} is not ip:port"))
}

/// The certificate-key cipher from base64 of 32 bytes, or empty for none.
pub fn cipher<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<CertKeyCipher>, D::Error> {
    let key = Secret::deserialize(deserializer)?;
    if key.expose().trim().is_empty() {
        return Ok(None);
    }
    CertKeyCipher::from_base64(key.expose()).map(Some).map_err(|err| invalid(format!("{err:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::IntoDeserializer;
    use serde::de::value::{Error, StrDeserializer};

    fn text(value: &str) -> StrDeserializer<'_, Error> {
        value.into_deserializer()
    }

    #[test]
    fn lists_drop_blanks_and_addresses_are_checked() {
        assert_eq!(list(text(" a, ,b ,")).unwrap(), ["a", "b"]);
        assert_eq!(emails(text("Ops@Example.com, root@example.com")).unwrap(), ["ops@example.com", "root@example.com"]);
        assert_eq!(addresses(text("127.0.0.1:53, [::1]:5353")).unwrap().len(), 2);
        assert!(addresses(text("127.0.0.1")).unwrap_err().to_string().contains("not ip:port"));
        assert_eq!(optional_address(text(" ")).unwrap(), None);
        assert!(optional_address(text("9464")).is_err());
        assert!(cipher(text("")).unwrap().is_none());
        assert!(cipher(text("c2hvcnQ=")).unwrap_err().to_string().contains("32 bytes"));
    }

    #[test]
    fn roles_are_known_and_at_least_one() {
        assert_eq!(Roles::parse("data, console").unwrap().to_string(), "data,console");
        assert!(Roles::parse("data,bogus").unwrap_err().to_string().contains("bogus"));
        assert!(Roles::parse(" , ").is_err());
        assert!(Roles::all().runs(Role::Control));
    }
}
