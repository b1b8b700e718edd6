//! The official [`ConnectionString`] written back as a URI, edits included: what its `Display`
//! and [`ConnectionString::to_uri_with_secrets`] show. Nothing else reads it: the client is
//! built from typed fields ([`super::from_uri`]).

use std::path::PathBuf;
use std::time::Duration;

use protocol::uri::UriOptions;
use selection::ReadPreference;

use super::compressor::{check_compressors, zlib_level_of, Compressor};
use super::connection_string::{uuid_representation_name_of, ConnectionString, HostInfo};
use super::tls::Tls;
use crate::error::{Error, Result};

impl ConnectionString {
    /// The spec-level connection string with the fields written over what it was parsed
    /// from, checked as a URI would be (an edit no URI can hold is an error).
    pub(super) fn to_parsed(&self) -> Result<protocol::uri::ConnectionString> {
        let mut parsed = self.parsed.clone();
        match &self.host_info {
            HostInfo::HostIdentifiers(hosts) => {
                parsed.hosts = hosts.clone();
                parsed.srv_host = None;
            }
            HostInfo::DnsRecord(name) => {
                parsed.hosts.clear();
                parsed.srv_host = Some(name.clone());
            }
        }
        let db = self.default_database.as_deref();
        parsed.credential = self
            .credential
            .as_ref()
            .map(|c| protocol::uri::CredentialFields::to_uri_credential(c).finish(db))
            .transpose()?;
        parsed.default_database = self.default_database.clone();
        write_options(self, &mut parsed.options)?;
        parsed.validate().map_err(|e| Error::invalid_argument(e.to_string()))?;
        Ok(parsed)
    }
}

/// Writes every typed field over the URI's options (`None` clears the option).
fn write_options(cs: &ConnectionString, o: &mut UriOptions) -> Result<()> {
    let ms = |d: Option<Duration>| d.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    write_tls(cs.tls.as_ref(), o);
    write_compressors(cs.compressors.as_deref(), o)?;
    write_read_preference(cs.read_preference.as_ref(), o)?;
    o.app_name = cs.app_name.clone();
    o.heartbeat_frequency_ms = ms(cs.heartbeat_frequency);
    o.local_threshold_ms = ms(cs.local_threshold);
    o.read_concern_level =
        cs.read_concern.as_ref().and_then(|r| r.level.as_ref()).map(|l| l.as_str().to_owned());
    o.replica_set = cs.replica_set.clone();
    let wc = cs.write_concern.clone().unwrap_or_default();
    wc.validate()?;
    (o.w, o.journal, o.w_timeout_ms) = (wc.w, wc.journal, ms(wc.w_timeout));
    o.server_selection_timeout_ms = ms(cs.server_selection_timeout);
    (o.max_pool_size, o.min_pool_size, o.max_connecting) =
        (cs.max_pool_size, cs.min_pool_size, cs.max_connecting);
    o.max_idle_time_ms = ms(cs.max_idle_time);
    o.connect_timeout_ms = ms(cs.connect_timeout);
    (o.retry_reads, o.retry_writes) = (cs.retry_reads, cs.retry_writes);
    o.server_monitoring_mode = cs.server_monitoring_mode;
    o.direct_connection = cs.direct_connection;
    o.load_balanced = cs.load_balanced;
    o.socket_timeout_ms = ms(cs.socket_timeout);
    o.srv_max_hosts = cs.srv_max_hosts;
    o.srv_service_name = cs.srv_service_name.clone();
    o.max_adaptive_retries = cs.max_adaptive_retries;
    o.enable_overload_retargeting = cs.enable_overload_retargeting;
    o.uuid_representation = cs.uuid_representation.map(|u| uuid_representation_name_of(u).to_owned());
    Ok(())
}

/// The `tls*` options of `tls` (`None` clears them).
fn write_tls(tls: Option<&Tls>, o: &mut UriOptions) {
    let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
    let enabled = match tls {
        Some(Tls::Enabled(t)) => Some(t),
        _ => None,
    };
    o.tls = tls.map(|t| matches!(t, Tls::Enabled(_)));
    o.tls_insecure = None;
    o.tls_allow_invalid_certificates = enabled.and_then(|t| t.allow_invalid_certificates);
    o.tls_allow_invalid_hostnames = enabled.and_then(|t| t.allow_invalid_hostnames);
    o.tls_ca_file = enabled.and_then(|t| path(&t.ca_file_path));
    o.tls_certificate_key_file = enabled.and_then(|t| path(&t.cert_key_file_path));
    o.tls_certificate_key_file_password = enabled
        .and_then(|t| t.tls_certificate_key_file_password.as_ref())
        .map(|p| protocol::uri::Secret::new(String::from_utf8_lossy(p)));
}

/// `compressors` and `zlibCompressionLevel` (`None` clears them); no URI option holds a zstd
/// level (`ClientOptions` keeps it).
fn write_compressors(compressors: Option<&[Compressor]>, o: &mut UriOptions) -> Result<()> {
    check_compressors(compressors.unwrap_or_default())?;
    o.compressors = compressors.map(|cs| cs.iter().map(Compressor::wire_name).collect());
    o.zlib_compression_level = zlib_level_of(compressors.unwrap_or_default());
    Ok(())
}

/// `readPreference`, `readPreferenceTags` and `maxStalenessSeconds` (`None` clears them).
fn write_read_preference(rp: Option<&ReadPreference>, o: &mut UriOptions) -> Result<()> {
    rp.map(ReadPreference::validate).transpose().map_err(|e| Error::invalid_argument(e.to_string()))?;
    o.read_preference = rp.map(ReadPreference::mode);
    o.read_preference_tags = rp.filter(|rp| !rp.tag_sets().is_empty()).map(|rp| rp.tag_sets().to_vec());
    o.max_staleness_seconds = rp.and_then(ReadPreference::max_staleness_seconds).map(u64::from);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_and_compressors_are_written_as_a_uri_names_them() {
        let mut cs =
            ConnectionString::parse("mongodb://h/?tls=true&tlsCAFile=/ca.pem&compressors=zlib").unwrap();
        cs.compressors = Some(vec![Compressor::Snappy, Compressor::Zlib { level: Some(9) }]);
        let o = cs.to_parsed().unwrap().options;
        assert_eq!((o.tls, o.tls_ca_file.as_deref()), (Some(true), Some("/ca.pem")));
        assert_eq!(
            o.compressors,
            Some(vec![protocol::uri::Compressor::Snappy, protocol::uri::Compressor::Zlib])
        );
        assert_eq!(o.zlib_compression_level, Some(9));
        cs.compressors = Some(vec![Compressor::Zstd { level: Some(30) }]);
        assert!(cs.to_parsed().is_err());
        (cs.compressors, cs.tls) = (None, None);
        let o = cs.to_parsed().unwrap().options;
        assert_eq!((o.tls, o.tls_ca_file, o.compressors), (None, None, None));
    }
}
