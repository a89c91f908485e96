//! Typed access to frontmatter keys, with errors that name the key.

use std::fmt;

use toml_edit::{Item, Table};

/// Which §4.4 reason a field problem maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// A required field missing, a wrong type, or a value outside its enumeration.
    Schema,
    /// `kind` disagrees with the file's location.
    WrongKind,
    /// `id` (or another identity key) disagrees with the filename or location.
    IdMismatch,
}

/// A field problem: what kind and a message naming the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    pub detail: String,
}

impl FieldError {
    pub fn schema(detail: impl Into<String>) -> Self {
        FieldError {
            kind: FieldErrorKind::Schema,
            detail: detail.into(),
        }
    }

    pub fn id_mismatch(detail: impl Into<String>) -> Self {
        FieldError {
            kind: FieldErrorKind::IdMismatch,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

/// Read-only typed view of a frontmatter table.
pub struct Fields<'a>(pub &'a Table);

impl<'a> Fields<'a> {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&'a Item> {
        self.0.get(key)
    }

    /// A required string.
    pub fn str(&self, key: &str) -> Result<&'a str, FieldError> {
        self.opt_str(key)?
            .ok_or_else(|| FieldError::schema(format!("required field `{key}` is missing")))
    }

    /// An optional string; present with another type is an error.
    pub fn opt_str(&self, key: &str) -> Result<Option<&'a str>, FieldError> {
        match self.0.get(key) {
            None => Ok(None),
            Some(item) => item
                .as_str()
                .map(Some)
                .ok_or_else(|| FieldError::schema(format!("`{key}` must be a string"))),
        }
    }

    /// An optional boolean.
    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, FieldError> {
        match self.0.get(key) {
            None => Ok(None),
            Some(item) => item
                .as_bool()
                .map(Some)
                .ok_or_else(|| FieldError::schema(format!("`{key}` must be true or false"))),
        }
    }

    /// An optional integer.
    pub fn opt_int(&self, key: &str) -> Result<Option<i64>, FieldError> {
        match self.0.get(key) {
            None => Ok(None),
            Some(item) => item
                .as_integer()
                .map(Some)
                .ok_or_else(|| FieldError::schema(format!("`{key}` must be an integer"))),
        }
    }

    /// A required timestamp (a TOML offset date-time), normalised to UTC.
    pub fn time(&self, key: &str) -> Result<jiff::Timestamp, FieldError> {
        self.opt_time(key)?
            .ok_or_else(|| FieldError::schema(format!("required field `{key}` is missing")))
    }

    /// An optional timestamp.
    pub fn opt_time(&self, key: &str) -> Result<Option<jiff::Timestamp>, FieldError> {
        let Some(item) = self.0.get(key) else {
            return Ok(None);
        };
        let bad = || FieldError::schema(format!("`{key}` must be an offset date-time"));
        let dt = item.as_datetime().ok_or_else(bad)?;
        if dt.offset.is_none() || dt.date.is_none() || dt.time.is_none() {
            return Err(bad());
        }
        dt.to_string()
            .parse::<jiff::Timestamp>()
            .map(Some)
            .map_err(|_| bad())
    }

    /// An optional array of strings (absent is empty).
    pub fn str_list(&self, key: &str) -> Result<Vec<&'a str>, FieldError> {
        let Some(item) = self.0.get(key) else {
            return Ok(Vec::new());
        };
        let bad = || FieldError::schema(format!("`{key}` must be an array of strings"));
        let array = item.as_array().ok_or_else(bad)?;
        array.iter().map(|v| v.as_str().ok_or_else(bad)).collect()
    }

    /// Checks `kind` against the kind this location holds.
    pub fn expect_kind(&self, expected: &str) -> Result<(), FieldError> {
        let kind = self.str("kind")?;
        if kind == expected {
            Ok(())
        } else {
            Err(FieldError {
                kind: FieldErrorKind::WrongKind,
                detail: format!("`kind` is \"{kind}\" but this location holds \"{expected}\""),
            })
        }
    }

    /// One value of an enumeration.
    pub fn enum_str(&self, key: &str, allowed: &[&str]) -> Result<&'a str, FieldError> {
        let value = self.str(key)?;
        check_enum(key, value, allowed)
    }

    /// An optional value of an enumeration.
    pub fn opt_enum_str(&self, key: &str, allowed: &[&str]) -> Result<Option<&'a str>, FieldError> {
        self.opt_str(key)?
            .map(|v| check_enum(key, v, allowed))
            .transpose()
    }
}

fn check_enum<'v>(key: &str, value: &'v str, allowed: &[&str]) -> Result<&'v str, FieldError> {
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(FieldError::schema(format!(
            "`{key}` is \"{value}\"; expected one of {}",
            allowed.join(", ")
        )))
    }
}
