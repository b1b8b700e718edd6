//! The rules a [`ClientOptions`] must keep, checked on its typed fields: the combinations the
//! SDAM, load-balancer, DNS seed list and server-selection specs forbid in a URI are forbidden
//! here too, however the options were made (a URI, the builder, a file, edits).

use super::client::ClientOptions;
use super::compressor::check_compressors;
use crate::error::{Error, Result};

impl ClientOptions {
    /// Checks the options as a URI's would be checked (after SRV resolution, when resolved).
    ///
    /// Errors: [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) naming
    /// the option.
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |name: &str, message: &str| Err(Error::invalid_argument(format!("{name}: {message}")));
        let srv = self.uri_notes.srv_host.is_some() || self.srv.is_some();
        let many_seeds = self.hosts.len() > 1;
        if self.direct_connection == Some(true) {
            if self.uri_notes.srv_host.is_some() {
                return bad("directConnection", "directConnection=true is not allowed with mongodb+srv");
            }
            if many_seeds {
                return bad("directConnection", "directConnection=true is not allowed with multiple hosts");
            }
        }
        if self.load_balanced == Some(true) {
            if many_seeds {
                return bad("loadBalanced", "loadBalanced=true is not allowed with multiple hosts");
            }
            if self.repl_set_name.is_some() {
                return bad("loadBalanced", "loadBalanced=true is not allowed with replicaSet");
            }
            if self.direct_connection == Some(true) {
                return bad("loadBalanced", "loadBalanced=true is not allowed with directConnection=true");
            }
            if self.srv_max_hosts.is_some_and(|n| n > 0) {
                return bad("loadBalanced", "loadBalanced=true is not allowed with a positive srvMaxHosts");
            }
        }
        if !srv {
            if self.srv_max_hosts.is_some() {
                return bad("srvMaxHosts", "srvMaxHosts requires the mongodb+srv scheme");
            }
            if self.srv_service_name.is_some() {
                return bad("srvServiceName", "srvServiceName requires the mongodb+srv scheme");
            }
        }
        if self.srv_max_hosts.is_some_and(|n| n > 0) && self.repl_set_name.is_some() {
            return bad("srvMaxHosts", "a positive srvMaxHosts is not allowed with replicaSet");
        }
        if let Some(rp) = self.selection_criteria.as_ref().and_then(|c| c.as_read_pref()) {
            rp.validate().map_err(|e| Error::invalid_argument(e.to_string()))?;
        }
        check_compressors(self.compressors.as_deref().unwrap_or_default())?;
        self.write_concern()?;
        if let Some(c) = &self.credential {
            protocol::uri::CredentialFields::to_uri_credential(c).finish(self.default_database.as_deref())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ServerAddress;

    fn two_hosts() -> ClientOptions {
        let hosts = vec![ServerAddress::parse("a:1").unwrap(), ServerAddress::parse("b:1").unwrap()];
        ClientOptions::builder().hosts(hosts).build()
    }

    #[test]
    fn what_a_uri_may_not_combine_the_typed_fields_may_not_either() {
        assert!(two_hosts().validate().is_ok());
        let cases: [fn(&mut ClientOptions); 5] = [
            |o| o.direct_connection = Some(true),
            |o| o.load_balanced = Some(true),
            |o| o.srv_max_hosts = Some(1),
            |o| o.srv_service_name = Some("svc".into()),
            |o| o.compressors = Some(vec![super::super::Compressor::Zlib { level: Some(12) }]),
        ];
        for (i, edit) in cases.into_iter().enumerate() {
            let mut o = two_hosts();
            edit(&mut o);
            let e = o.validate().unwrap_err();
            assert!(matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. }), "case {i}: {e}");
        }
    }
}
