//! Each store's builder from the environment its users' own tools read.
//! `object_store` reads the `AWS_*`, `GOOGLE_*` and `AZURE_STORAGE_*`
//! variables; here, what it does not:
//! - S3: the shared profile files (`~/.aws/credentials` and `~/.aws/config`,
//!   or `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE`), profile
//!   `AWS_PROFILE` or `default`, as the AWS CLI and boto3 read them, for
//!   what the variables leave out: keys, region, endpoint. A profile that
//!   gets its keys another way (SSO, a role, a process) is refused with the
//!   command that exports them; without the files, `object_store` goes on
//!   to a pod's web identity or an instance's metadata.
//! - Azure: `AZURE_STORAGE_CONNECTION_STRING`, as the Azure CLI, azcopy and
//!   the SDKs take it.
//!
//! An `http://` endpoint is plain HTTP by choice, as boto3 and the Azure
//! SDKs take it.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use object_store::aws::AmazonS3Builder;
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};

/// The environment's variable `name`, if set and not empty.
fn variable(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// Whether `endpoint` is plain HTTP.
fn is_plain_http(endpoint: &str) -> bool {
    endpoint.trim().to_ascii_lowercase().starts_with("http://")
}

/// The S3 builder: `object_store`'s from the variables, completed from the
/// profile files where they are silent.
pub(super) fn s3_from_env() -> Result<AmazonS3Builder> {
    let mut builder = AmazonS3Builder::from_env();
    let profile = Profile::read()?;
    let keys_set = variable("AWS_ACCESS_KEY_ID").is_some();
    if let (Some(profile), false) = (&profile, keys_set) {
        match (
            profile.get("aws_access_key_id"),
            profile.get("aws_secret_access_key"),
        ) {
            (Some(id), Some(secret)) => {
                builder = builder
                    .with_access_key_id(id)
                    .with_secret_access_key(secret);
                if let Some(token) = profile.get("aws_session_token") {
                    builder = builder.with_token(token);
                }
            }
            // A profile of a region alone leaves the keys to a pod's or an
            // instance's role; one that names another way cannot.
            _ => {
                if let Some(way) = OTHER_WAYS.iter().find(|key| profile.get(key).is_some()) {
                    bail!(
                        "AWS profile `{}` gets its keys by `{way}`, which neardup does not: export them first \
                         (eval \"$(aws configure export-credentials --profile {} --format env)\")",
                        profile.name,
                        profile.name
                    );
                }
            }
        }
    }
    let region_set = variable("AWS_REGION")
        .or_else(|| variable("AWS_DEFAULT_REGION"))
        .is_some();
    if let (Some(region), false) = (profile.as_ref().and_then(|p| p.get("region")), region_set) {
        builder = builder.with_region(region);
    }
    let endpoint = variable("AWS_ENDPOINT_URL").or_else(|| variable("AWS_ENDPOINT"));
    let endpoint = match endpoint {
        Some(endpoint) => Some(endpoint),
        None => match profile.as_ref().and_then(|p| p.get("endpoint_url")) {
            Some(endpoint) => {
                builder = builder.with_endpoint(endpoint);
                Some(endpoint.to_string())
            }
            None => None,
        },
    };
    let allow_http =
        variable("AWS_ALLOW_HTTP").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    Ok(builder.with_allow_http(allow_http || endpoint.is_some_and(|e| is_plain_http(&e))))
}

/// Profile keys that name a way of getting keys other than the keys.
const OTHER_WAYS: [&str; 5] = [
    "sso_session",
    "sso_start_url",
    "role_arn",
    "credential_process",
    "web_identity_token_file",
];

/// An AWS profile's settings, from both files (the credentials file's win).
struct Profile {
    name: String,
    settings: HashMap<String, String>,
}

impl Profile {
    fn get(&self, key: &str) -> Option<&str> {
        self.settings.get(key).map(String::as_str)
    }

    /// Profile `AWS_PROFILE` (else `default`) from the files; none when the
    /// files hold no such profile, an error if `AWS_PROFILE` names one
    /// that is not there.
    fn read() -> Result<Option<Profile>> {
        let named = variable("AWS_PROFILE");
        let name = named.clone().unwrap_or_else(|| "default".to_string());
        let home = || std::env::var_os("HOME").map(PathBuf::from);
        let file = |variable_name: &str, default: &str| {
            variable(variable_name)
                .map(PathBuf::from)
                .or_else(|| home().map(|home| home.join(".aws").join(default)))
        };
        let mut settings = HashMap::new();
        let mut found = false;
        // The config file's sections are `[profile NAME]`, but `[default]`.
        let config_section = match name.as_str() {
            "default" => "default".to_string(),
            other => format!("profile {other}"),
        };
        for (path, section) in [
            (file("AWS_CONFIG_FILE", "config"), config_section),
            (
                file("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
                name.clone(),
            ),
        ] {
            let Some(path) = path.filter(|path| path.is_file()) else {
                continue;
            };
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("{}: cannot read", path.display()))?;
            if let Some(section) = ini_section(&text, &section) {
                found = true;
                settings.extend(section);
            }
        }
        match (found, named) {
            (true, _) => Ok(Some(Profile { name, settings })),
            (false, Some(named)) => bail!(
                "AWS_PROFILE={named}: no such profile in ~/.aws/config or ~/.aws/credentials \
                 (or AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE)"
            ),
            (false, None) => Ok(None),
        }
    }
}

/// The `key = value` lines of section `[name]` of an INI text, keys in
/// lower case; none if it has no such section.
fn ini_section(text: &str, name: &str) -> Option<HashMap<String, String>> {
    let mut section: Option<HashMap<String, String>> = None;
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = header.trim() == name;
            if inside {
                section.get_or_insert_with(HashMap::new);
            }
            continue;
        }
        if let (true, Some((key, value))) = (inside, line.split_once('=')) {
            let settings = section.get_or_insert_with(HashMap::new);
            settings.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    section
}

/// The Azure builder: `object_store`'s from the `AZURE_STORAGE_*`
/// variables, and over them a connection string's account, key, SAS, blob
/// endpoint or development storage.
pub(super) fn azure_from_env() -> Result<MicrosoftAzureBuilder> {
    const VARIABLE: &str = "AZURE_STORAGE_CONNECTION_STRING";
    let mut builder = MicrosoftAzureBuilder::from_env();
    let Some(text) = variable(VARIABLE) else {
        return Ok(builder);
    };
    let parts = text
        .split(';')
        .map(str::trim)
        .filter(|part| !part.is_empty());
    for (at, part) in parts.enumerate() {
        // Never shown: a part may be a key.
        let Some((key, value)) = part.split_once('=') else {
            bail!("{VARIABLE}: part {} is not Key=Value", at + 1);
        };
        builder = match key {
            "AccountName" => builder.with_account(value),
            "AccountKey" => builder.with_access_key(value),
            "SharedAccessSignature" => builder.with_config(AzureConfigKey::SasKey, value),
            "BlobEndpoint" => builder
                .with_endpoint(value.trim_end_matches('/').to_string())
                .with_allow_http(is_plain_http(value)),
            "UseDevelopmentStorage" => {
                builder.with_use_emulator(value.eq_ignore_ascii_case("true"))
            }
            // The protocol and suffix only make the default endpoint, which
            // the account names; the other services' endpoints are not read.
            _ => builder,
        };
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ini_section_is_read_whole_and_only_it() {
        let text = "# AWS\n[default]\nregion = eu-west-1\n\n[profile crawl]\nRegion=us-east-2\n; note\nendpoint_url = http://127.0.0.1:9000\n[other]\nregion = x\n";
        let crawl = ini_section(text, "profile crawl").unwrap();
        assert_eq!(crawl.len(), 2);
        assert_eq!(crawl["region"], "us-east-2");
        assert_eq!(crawl["endpoint_url"], "http://127.0.0.1:9000");
        assert_eq!(ini_section(text, "default").unwrap()["region"], "eu-west-1");
        assert!(ini_section(text, "crawl").is_none());
        assert!(ini_section("[empty]\n", "empty").unwrap().is_empty());
    }
}
