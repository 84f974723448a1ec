//! How a subcommand's configuration is read: every problem kept
//! ([`ConfigErrors`]), and the readers more than one configuration shares.

use live_ci_boot::settings::{Env, SettingsError};
use live_ci_core::settings::ConfigError;
use live_ci_core::terraform::CommandTemplate;
use live_ci_metadb::MetadbConfig;

/// Every problem with the environment a subcommand found at start, so that one
/// failed start names all of them (the module sets the variables; a broken
/// deployment should not be fixed one restart at a time).
#[derive(Debug, PartialEq, Eq)]
pub struct ConfigErrors {
    /// The problems, read by the one settings reader every binary shares.
    pub settings: SettingsError,
    /// A terra-run's task token, when it was given: the task answers it with
    /// these problems, so the state machine does not wait out its heartbeat.
    pub task_token: Option<String>,
}

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.settings.fmt(f)
    }
}

impl std::error::Error for ConfigErrors {}

/// A terraform command template; `subcommand` is the invocation that
/// receives live-ci's flags (`-out=`, `-destroy -target=`,
/// `-detailed-exitcode`, the apply's plan file).
pub(super) fn template<F: Fn(&str) -> Option<String>>(
    check: &mut Env<F>,
    name: &'static str,
    default: &str,
    subcommand: &str,
) -> Option<CommandTemplate> {
    let text = check.or(name, default);
    let read = CommandTemplate::with_invocation(&text, subcommand).map_err(|reason| {
        ConfigError::Invalid {
            name,
            value: text.clone(),
            reason,
        }
    });
    check.keep(read)
}

/// The metadb connection, required: `METADB_URL`, or the Data API's
/// variables.
pub(super) fn metadb<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<MetadbConfig> {
    let configured = ["METADB_URL", "METADB_CLUSTER_ARN"]
        .iter()
        .any(|k| check.optional(k).is_some());
    if configured {
        let read = MetadbConfig::from_settings(check.settings());
        check.keep(read)
    } else {
        check.problem(ConfigError::Missing("METADB_URL"))
    }
}

/// The config when nothing was wrong, else every problem found (without a
/// task token: [`Config::from_lookup`] adds terra-run's).
pub(super) fn finish<T, F: Fn(&str) -> Option<String>>(
    check: Env<F>,
    value: Option<T>,
) -> Result<T, ConfigErrors> {
    check.finish(value).map_err(|settings| ConfigErrors {
        settings,
        task_token: None,
    })
}

/// A subcommand's config, read from any lookup (the process environment, or a
/// map in tests).
pub trait FromLookup: Sized {
    /// Reads this config, adding every problem to `check`.
    fn read<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Self>;

    /// This config from `get`, or every problem with it.
    fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigErrors> {
        let mut check = Env::new(get);
        let value = Self::read(&mut check);
        finish(check, value)
    }
}
