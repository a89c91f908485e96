//! Shortcut templates (docs/FORMAT.md §8) and POSIX single-quoting.
//!
//! A template is literal text with `{{param}}` placeholders and `[[ … ]]` optional groups.
//! Every substituted value becomes exactly one shell word: it is single-quoted, each `'`
//! written as `'\''`, unless its parameter is `raw`. A group is dropped whole when any
//! placeholder inside it is empty, and otherwise kept without its brackets; groups do not
//! nest. Validation happens when a shortcut is created, so a stored template that fails to
//! parse is reported, never half-expanded.

use std::collections::BTreeMap;

use crate::model::shortcut::{Param, is_param_name};

/// How many shortcuts a catalogue shows before announcing the rest: `run --list` and the
/// brief's shortcut section share it (COMMANDS.md §14.18).
pub const CATALOG_LIMIT: usize = 12;

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Placeholder(String),
    /// An optional group: text and placeholders, no nested group.
    Group(Vec<Piece>),
}

/// A template that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

/// Why a template or an expansion was rejected, in words fit for an error message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateError {
    /// `{{` without its `}}`.
    UnclosedPlaceholder,
    /// `[[` without its `]]`.
    UnclosedGroup,
    /// `]]` with no open group.
    StrayGroupEnd,
    /// `[[` inside a group.
    NestedGroup,
    /// `{{x}}` where `x` is not a parameter name.
    BadPlaceholder(String),
    /// `{{x}}` where `x` is not declared in `params`.
    Undeclared(String),
    /// A NUL byte in the template.
    Nul,
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TemplateError::UnclosedPlaceholder => f.write_str("a `{{` is never closed by `}}`"),
            TemplateError::UnclosedGroup => f.write_str("a `[[` is never closed by `]]`"),
            TemplateError::StrayGroupEnd => f.write_str("a `]]` closes no `[[` group"),
            TemplateError::NestedGroup => f.write_str("optional groups `[[ … ]]` do not nest"),
            TemplateError::BadPlaceholder(p) => write!(
                f,
                "`{{{{{p}}}}}` is not a placeholder: names match [a-z][a-z0-9_]{{0,31}}"
            ),
            TemplateError::Undeclared(p) => write!(
                f,
                "the template uses `{{{{{p}}}}}` but declares no parameter `{p}` (add `--param {p}`)"
            ),
            TemplateError::Nul => f.write_str("the template contains a NUL byte"),
        }
    }
}

impl Template {
    /// Parses `text`, checking that every placeholder names one of `declared`.
    pub fn parse(text: &str, declared: &[&str]) -> Result<Template, TemplateError> {
        if text.contains('\0') {
            return Err(TemplateError::Nul);
        }
        let mut top: Vec<Piece> = Vec::new();
        let mut group: Option<Vec<Piece>> = None;
        let mut literal = String::new();
        let mut rest = text;
        while !rest.is_empty() {
            let next = ["{{", "[[", "]]"]
                .iter()
                .filter_map(|m| rest.find(m).map(|i| (i, *m)))
                .min();
            let Some((at, marker)) = next else {
                literal.push_str(rest);
                break;
            };
            literal.push_str(&rest[..at]);
            rest = &rest[at + 2..];
            let pieces = group.as_mut().unwrap_or(&mut top);
            flush(&mut literal, pieces);
            match marker {
                "{{" => {
                    let end = rest.find("}}").ok_or(TemplateError::UnclosedPlaceholder)?;
                    let name = rest[..end].trim();
                    if !is_param_name(name) {
                        return Err(TemplateError::BadPlaceholder(rest[..end].to_string()));
                    }
                    if !declared.contains(&name) {
                        return Err(TemplateError::Undeclared(name.to_string()));
                    }
                    pieces.push(Piece::Placeholder(name.to_string()));
                    rest = &rest[end + 2..];
                }
                "[[" => {
                    if group.is_some() {
                        return Err(TemplateError::NestedGroup);
                    }
                    group = Some(Vec::new());
                }
                _ => {
                    let inner = group.take().ok_or(TemplateError::StrayGroupEnd)?;
                    top.push(Piece::Group(inner));
                }
            }
        }
        if group.is_some() {
            return Err(TemplateError::UnclosedGroup);
        }
        flush(&mut literal, &mut top);
        Ok(Template { pieces: top })
    }

    /// The placeholder names the template uses, in order of first use.
    pub fn placeholders(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in &self.pieces {
            let inner = match p {
                Piece::Group(inner) => inner.as_slice(),
                other => std::slice::from_ref(other),
            };
            for q in inner {
                if let Piece::Placeholder(n) = q
                    && !out.contains(&n.as_str())
                {
                    out.push(n);
                }
            }
        }
        out
    }

    /// Expands the template: each placeholder takes the call-site value, else the parameter's
    /// default, else empty; values are single-quoted unless the parameter is `raw`.
    pub fn expand(
        &self,
        params: &[Param],
        values: &BTreeMap<String, String>,
    ) -> Result<String, ExpandError> {
        for key in values.keys() {
            if !params.iter().any(|p| &p.name == key) {
                return Err(ExpandError::Unknown(key.clone()));
            }
        }
        let mut resolved: BTreeMap<&str, (&str, bool)> = BTreeMap::new();
        for p in params {
            let value = values
                .get(&p.name)
                .map(String::as_str)
                .or(p.default.as_deref())
                .unwrap_or("");
            if value.contains('\0') {
                return Err(ExpandError::Nul(p.name.clone()));
            }
            if p.required && value.is_empty() {
                return Err(ExpandError::Missing(p.name.clone()));
            }
            resolved.insert(&p.name, (value, p.raw));
        }
        let word = |name: &str| -> String {
            match resolved.get(name) {
                Some((v, true)) => (*v).to_string(),
                Some((v, false)) => quote(v),
                // Validation guarantees every placeholder is declared.
                None => quote(""),
            }
        };
        let mut out = String::new();
        for (i, piece) in self.pieces.iter().enumerate() {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Placeholder(n) => out.push_str(&word(n)),
                Piece::Group(inner) => {
                    let empty = inner.iter().any(|p| match p {
                        Piece::Placeholder(n) => {
                            resolved.get(n.as_str()).is_none_or(|v| v.0.is_empty())
                        }
                        _ => false,
                    });
                    if empty {
                        // The group goes with one of the spaces around it, so
                        // `x [[ --f {{f}} ]] y` reads `x y` and a trailing group leaves no
                        // trailing space.
                        let after_space = match self.pieces.get(i + 1) {
                            Some(Piece::Text(t)) => t.starts_with(' '),
                            Some(_) => false,
                            None => true,
                        };
                        if after_space && out.ends_with(' ') {
                            out.pop();
                        }
                        continue;
                    }
                    // The spaces just inside `[[ ` and ` ]]` belong to the brackets.
                    let last = inner.len().saturating_sub(1);
                    for (j, p) in inner.iter().enumerate() {
                        match p {
                            Piece::Placeholder(n) => out.push_str(&word(n)),
                            Piece::Text(t) => {
                                let t = if j == 0 { t.trim_start_matches(' ') } else { t };
                                let t = if j == last {
                                    t.trim_end_matches(' ')
                                } else {
                                    t
                                };
                                out.push_str(t);
                            }
                            Piece::Group(_) => {}
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Why values could not be put into a template (exit 2, naming the parameter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// `--param k=v` for a parameter the shortcut does not declare.
    Unknown(String),
    /// A required parameter without a value.
    Missing(String),
    /// A value containing NUL, which no shell word can carry.
    Nul(String),
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpandError::Unknown(k) => write!(f, "the shortcut has no parameter `{k}`"),
            ExpandError::Missing(k) => {
                write!(f, "parameter `{k}` is required: pass `--param {k}=VALUE`")
            }
            ExpandError::Nul(k) => write!(f, "the value of `{k}` contains a NUL byte"),
        }
    }
}

fn flush(literal: &mut String, pieces: &mut Vec<Piece>) {
    if !literal.is_empty() {
        pieces.push(Piece::Text(std::mem::take(literal)));
    }
}

/// POSIX single-quoting: `s` as exactly one shell word that every POSIX shell reads back as
/// the same bytes. Each `'` becomes `'\''` (close, escaped quote, reopen).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// The parameter list as `run --list` shows it: `name` when required, `name?` otherwise.
pub fn param_signature(params: &[Param]) -> Vec<String> {
    params
        .iter()
        .map(|p| {
            if p.required {
                p.name.clone()
            } else {
                format!("{}?", p.name)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str) -> Param {
        Param {
            name: name.into(),
            required: false,
            raw: false,
            default: None,
            description: None,
        }
    }

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn validation_names_what_is_wrong() {
        let p = ["f"];
        assert_eq!(
            Template::parse("x {{g}}", &p),
            Err(TemplateError::Undeclared("g".into()))
        );
        assert_eq!(
            Template::parse("x {{f", &p),
            Err(TemplateError::UnclosedPlaceholder)
        );
        assert_eq!(
            Template::parse("x [[ {{f}}", &p),
            Err(TemplateError::UnclosedGroup)
        );
        assert_eq!(
            Template::parse("x [[ [[ {{f}} ]] ]]", &p),
            Err(TemplateError::NestedGroup)
        );
        assert_eq!(
            Template::parse("x ]]", &p),
            Err(TemplateError::StrayGroupEnd)
        );
        assert_eq!(
            Template::parse("x {{F}}", &p),
            Err(TemplateError::BadPlaceholder("F".into()))
        );
        assert_eq!(Template::parse("x\0", &p), Err(TemplateError::Nul));
        assert!(Template::parse("jq '{a:{b:1}}'", &[]).is_ok());
    }

    #[test]
    fn optional_groups_drop_when_empty() {
        let t = Template::parse(
            "./scripts/test.sh checkout [[ --filter {{filter}} ]]",
            &["filter"],
        )
        .expect("valid");
        let params = [param("filter")];
        assert_eq!(
            t.expand(&params, &values(&[])).expect("expands"),
            "./scripts/test.sh checkout"
        );
        assert_eq!(
            t.expand(&params, &values(&[("filter", "rounding")]))
                .expect("expands"),
            "./scripts/test.sh checkout --filter 'rounding'"
        );
        assert_eq!(t.placeholders(), vec!["filter"]);
        let mid = Template::parse("x [[ --f {{f}} ]] y", &["f"]).expect("valid");
        assert_eq!(
            mid.expand(&[param("f")], &values(&[])).expect("expands"),
            "x y"
        );
        assert_eq!(
            mid.expand(&[param("f")], &values(&[("f", "a  b")]))
                .expect("expands"),
            "x --f 'a  b' y"
        );
    }

    #[test]
    fn values_are_one_quoted_word_unless_raw() {
        let t = Template::parse("echo {{a}} {{b}}", &["a", "b"]).expect("valid");
        let mut b = param("b");
        b.raw = true;
        let params = [param("a"), b];
        assert_eq!(
            t.expand(&params, &values(&[("a", "it's $(x)"), ("b", "$HOME")]))
                .expect("expands"),
            "echo 'it'\\''s $(x)' $HOME"
        );
        assert_eq!(
            t.expand(&params, &values(&[])).expect("expands"),
            "echo '' "
        );
    }

    #[test]
    fn parameters_are_checked_at_the_call() {
        let t = Template::parse("x {{a}}", &["a"]).expect("valid");
        let mut a = param("a");
        a.required = true;
        let params = [a.clone()];
        assert_eq!(
            t.expand(&params, &values(&[])),
            Err(ExpandError::Missing("a".into()))
        );
        assert_eq!(
            t.expand(&params, &values(&[("z", "1"), ("a", "1")])),
            Err(ExpandError::Unknown("z".into()))
        );
        assert_eq!(
            t.expand(&params, &values(&[("a", "a\0b")])),
            Err(ExpandError::Nul("a".into()))
        );
        a.default = Some("d".into());
        assert_eq!(t.expand(&[a], &values(&[])).expect("default"), "x 'd'");
    }

    #[test]
    fn quoting() {
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("'"), "''\\'''");
        assert_eq!(param_signature(&[param("f")]), vec!["f?"]);
    }
}
