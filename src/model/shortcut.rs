//! Shortcuts (docs/FORMAT.md §8): named, parameterised commands with a declared effect.

use serde::Serialize;
use toml_edit::{DocumentMut, Item, Value};

use super::fields::{FieldError, Fields};

/// What running a shortcut does to the work tree. A shortcut whose stored `effect` is missing
/// or unknown has none and never runs (it is never taken as `read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    Read,
    Write,
    Destructive,
}

impl Effect {
    /// Parses `read`, `write` or `destructive`.
    pub fn parse(s: &str) -> Option<Effect> {
        match s {
            "read" => Some(Effect::Read),
            "write" => Some(Effect::Write),
            "destructive" => Some(Effect::Destructive),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Destructive => "destructive",
        }
    }
}

/// One declared parameter (`params` entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Param {
    pub name: String,
    pub required: bool,
    pub raw: bool,
    pub default: Option<String>,
    pub description: Option<String>,
}

/// A parsed shortcut.
///
/// Invariant: `name` equals the file stem. `effect` is `None` exactly when the stored value is
/// missing or not one of the three effects; such a shortcut is still listed, never run.
#[derive(Debug, Clone)]
pub struct Shortcut {
    pub name: String,
    pub created: jiff::Timestamp,
    pub created_by: String,
    pub owner: String,
    pub summary: String,
    pub command: String,
    pub effect: Option<Effect>,
    pub params: Vec<Param>,
    pub roles: Vec<String>,
    pub dir: Option<String>,
}

impl Shortcut {
    /// Parses the shortcut file `<stem>.md`.
    pub fn from_front(front: &DocumentMut, stem: &str) -> Result<Shortcut, FieldError> {
        let f = Fields(front.as_table());
        f.expect_kind("shortcut")?;
        let name = f.str("name")?;
        if name != stem {
            return Err(FieldError::id_mismatch(format!(
                "`name` \"{name}\" does not match the filename \"{stem}.md\""
            )));
        }
        Ok(Shortcut {
            name: name.to_string(),
            created: f.time("created")?,
            created_by: f.str("created_by")?.to_string(),
            owner: f.str("owner")?.to_string(),
            summary: f.str("summary")?.to_string(),
            command: f.str("command")?.to_string(),
            effect: front
                .get("effect")
                .and_then(Item::as_str)
                .and_then(Effect::parse),
            params: params(f.get("params"))?,
            roles: f.str_list("roles")?.into_iter().map(String::from).collect(),
            dir: f.opt_str("dir")?.map(String::from),
        })
    }

    /// The declared parameter `name`.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// Whether `name` is a valid parameter name: `[a-z][a-z0-9_]{0,31}`.
pub fn is_param_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 32
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
}

fn params(item: Option<&Item>) -> Result<Vec<Param>, FieldError> {
    let Some(item) = item else {
        return Ok(Vec::new());
    };
    let bad = || {
        FieldError::schema(
            "`params` must be an array of {name, required, raw, description, default}",
        )
    };
    // Written inline (`params = [{ … }]`) or as an array of tables (`[[params]]`).
    let tables: Vec<&dyn toml_edit::TableLike> = if let Some(array) = item.as_array() {
        array
            .iter()
            .map(|v| match v {
                Value::InlineTable(t) => Ok(t as &dyn toml_edit::TableLike),
                _ => Err(bad()),
            })
            .collect::<Result<_, _>>()?
    } else if let Some(aot) = item.as_array_of_tables() {
        aot.iter().map(|t| t as &dyn toml_edit::TableLike).collect()
    } else {
        return Err(bad());
    };
    let mut out: Vec<Param> = Vec::new();
    for t in tables {
        let text = |key: &str| -> Result<Option<String>, FieldError> {
            match t.get(key) {
                None => Ok(None),
                Some(v) => v.as_str().map(|s| Some(s.to_string())).ok_or_else(|| {
                    FieldError::schema(format!("`params`: `{key}` must be a string"))
                }),
            }
        };
        let flag = |key: &str| -> Result<bool, FieldError> {
            match t.get(key) {
                None => Ok(false),
                Some(v) => v.as_bool().ok_or_else(|| {
                    FieldError::schema(format!("`params`: `{key}` must be true or false"))
                }),
            }
        };
        let name = text("name")?.ok_or_else(bad)?;
        if !is_param_name(&name) {
            return Err(FieldError::schema(format!(
                "`params`: \"{name}\" is not a parameter name ([a-z][a-z0-9_]{{0,31}})"
            )));
        }
        if out.iter().any(|p| p.name == name) {
            return Err(FieldError::schema(format!(
                "`params`: \"{name}\" is declared twice"
            )));
        }
        out.push(Param {
            required: flag("required")?,
            raw: flag("raw")?,
            default: text("default")?,
            description: text("description")?,
            name,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(front: &str) -> Result<Shortcut, FieldError> {
        let doc: DocumentMut = front.parse().expect("toml");
        Shortcut::from_front(&doc, "test")
    }

    const HEAD: &str = "kind = \"shortcut\"\nname = \"test\"\ncreated = 2026-03-02T09:06:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWR660YQF1Y2A1E4WME2TC\"\nsummary = \"s\"\ncommand = \"x {{a}}\"\n";

    #[test]
    fn an_unknown_or_missing_effect_is_none() {
        assert_eq!(parse(HEAD).expect("parses").effect, None);
        let s = parse(&format!("{HEAD}effect = \"maybe\"\n")).expect("parses");
        assert_eq!(s.effect, None);
        let s = parse(&format!("{HEAD}effect = \"read\"\n")).expect("parses");
        assert_eq!(s.effect, Some(Effect::Read));
    }

    #[test]
    fn params_inline_or_as_tables() {
        let s = parse(&format!(
            "{HEAD}params = [{{ name = \"a\", required = true, default = \"d\" }}]\n"
        ))
        .expect("inline");
        assert_eq!(s.params[0].name, "a");
        assert!(s.params[0].required && !s.params[0].raw);
        assert_eq!(s.params[0].default.as_deref(), Some("d"));
        let s = parse(&format!("{HEAD}[[params]]\nname = \"a\"\nraw = true\n")).expect("tables");
        assert!(s.params[0].raw);
        assert!(parse(&format!("{HEAD}params = [{{ name = \"A\" }}]\n")).is_err());
        assert!(
            parse(&format!(
                "{HEAD}params = [{{ name = \"a\" }}, {{ name = \"a\" }}]\n"
            ))
            .is_err()
        );
    }

    #[test]
    fn param_names() {
        assert!(is_param_name("filter") && is_param_name("a_1"));
        for bad in ["", "A", "1a", "a-b", &"a".repeat(33)] {
            assert!(!is_param_name(bad), "{bad}");
        }
    }
}
