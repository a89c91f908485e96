//! `config.toml` (docs/FORMAT.md §5, §23).

use std::path::Path;

use toml_edit::{DocumentMut, Item};

use super::Error;
use crate::store::{Fs, Problem, Reason, TomlRecord};

/// The only workspace format this dacli reads or writes.
pub const SUPPORTED_FORMAT: i64 = 2;
/// The oldest format this dacli still reads and writes; `doctor --fix` upgrades it.
pub const OLDEST_FORMAT: i64 = 1;

/// The workspace configuration, with the editable document kept so a rewrite preserves every
/// key dacli does not know.
#[derive(Debug, Clone)]
pub struct Config {
    pub doc: DocumentMut,
    pub format: i64,
    pub workspace_id: String,
    pub name: Option<String>,
    pub require_token: bool,
}

impl Config {
    /// Loads and checks `config.toml`: a missing, lower or higher `format` is refused before
    /// anything else is read (§23).
    pub fn load(fs: &Fs, path: &Path) -> Result<Config, Error> {
        let bytes = fs.read(path)?;
        let shown = fs.display(path);
        let record = TomlRecord::parse(&shown, &bytes).map_err(crate::store::Error::Malformed)?;
        Config::from_doc(&shown, record.doc)
    }

    /// Validates a parsed config document.
    pub fn from_doc(shown: &str, doc: DocumentMut) -> Result<Config, Error> {
        let format = match doc.get("format") {
            Some(item) => match item.as_integer() {
                Some(n) => n,
                None => {
                    return Err(Error::FormatUnsupported {
                        path: shown.to_string(),
                        found: item.to_string().trim().to_string(),
                        supported: SUPPORTED_FORMAT,
                    });
                }
            },
            None => {
                return Err(Error::FormatUnsupported {
                    path: shown.to_string(),
                    found: "none (the `format` key is missing)".into(),
                    supported: SUPPORTED_FORMAT,
                });
            }
        };
        if !(OLDEST_FORMAT..=SUPPORTED_FORMAT).contains(&format) {
            return Err(Error::FormatUnsupported {
                path: shown.to_string(),
                found: format.to_string(),
                supported: SUPPORTED_FORMAT,
            });
        }
        let schema = |detail: String| {
            Error::Store(crate::store::Error::Malformed(Problem {
                path: shown.to_string(),
                reason: Reason::Schema,
                detail,
            }))
        };
        let workspace_id = doc
            .get("workspace_id")
            .and_then(Item::as_str)
            .ok_or_else(|| schema("`workspace_id` must be a ULID string".into()))?
            .to_string();
        let name = match doc.get("name") {
            None => None,
            Some(item) => Some(
                item.as_str()
                    .ok_or_else(|| schema("`name` must be a string".into()))?
                    .to_string(),
            ),
        };
        let require_token = match doc.get("policy").and_then(|p| p.get("require_token")) {
            None => false,
            Some(item) => item
                .as_bool()
                .ok_or_else(|| schema("`policy.require_token` must be a boolean".into()))?,
        };
        Ok(Config {
            doc,
            format,
            workspace_id,
            name,
            require_token,
        })
    }
}
