//! Role scopes (docs/FORMAT.md §7): which repository paths a role covers.
//!
//! Globs match repository paths segment by segment: `**` matches zero or more whole segments,
//! `*` any characters within one segment, `?` one character. `out_of_scope` beats `scope`, and
//! an empty `scope` covers every path. A task is inside a role's scope when every one of its
//! `traces` is; a task without traces is inside every scope.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A compiled role scope.
#[derive(Debug, Clone)]
pub struct Scope {
    /// `None`: every path is covered (no `scope` globs).
    include: Option<GlobSet>,
    exclude: GlobSet,
}

impl Scope {
    /// Compiles a role's `scope` and `out_of_scope` globs; an invalid glob is named in the
    /// error.
    pub fn new(scope: &[String], out_of_scope: &[String]) -> Result<Scope, String> {
        let include = if scope.is_empty() {
            None
        } else {
            Some(compile(scope)?)
        };
        Ok(Scope {
            include,
            exclude: compile(out_of_scope)?,
        })
    }

    /// The scope of an agent without a role (or of root): every path.
    pub fn everything() -> Scope {
        Scope {
            include: None,
            exclude: GlobSet::empty(),
        }
    }

    /// Whether `path` is inside the scope: matched by `scope` (or `scope` is empty) and by no
    /// `out_of_scope` glob.
    pub fn covers(&self, path: &str) -> bool {
        if self.exclude.is_match(path) {
            return false;
        }
        self.include.as_ref().is_none_or(|set| set.is_match(path))
    }

    /// The traces outside the scope, in their order; empty when the task may be claimed.
    pub fn outside<'a>(&self, traces: &'a [String]) -> Vec<&'a str> {
        traces
            .iter()
            .map(String::as_str)
            .filter(|t| !self.covers(t))
            .collect()
    }
}

/// The role that should answer a question about `path` (COMMANDS.md §7 `ask --need`): among
/// roles with a non-empty `scope` covering it, the one whose matching glob has the longest
/// literal prefix; ties go to the first name. `roles` are `(name, scope, out_of_scope)`.
pub fn route<'a>(roles: &'a [(String, Vec<String>, Vec<String>)], path: &str) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for (name, scope, out) in roles {
        if scope.is_empty() {
            continue;
        }
        let Ok(compiled) = Scope::new(scope, out) else {
            continue;
        };
        if !compiled.covers(path) {
            continue;
        }
        let specificity = scope
            .iter()
            .filter(|g| Scope::new(&[(*g).clone()], &[]).is_ok_and(|s| s.covers(path)))
            .map(|g| g.find(['*', '?', '[', '{']).unwrap_or(g.len()))
            .max()
            .unwrap_or(0);
        let better = match best {
            None => true,
            Some((b, n)) => specificity > b || (specificity == b && name.as_str() < n),
        };
        if better {
            best = Some((specificity, name));
        }
    }
    best.map(|(_, n)| n)
}

/// Checks one glob, saying what is wrong with it.
pub fn check_glob(pattern: &str) -> Result<(), String> {
    compile(&[pattern.to_string()]).map(|_| ())
}

fn compile(patterns: &[String]) -> Result<GlobSet, String> {
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        set.add(glob(p)?);
        // A trailing `/**` also matches zero segments: `libs/money/**` covers the directory
        // `libs/money` itself, which globset alone would not.
        if let Some(base) = p.strip_suffix("/**")
            && !base.is_empty()
        {
            set.add(glob(base)?);
        }
    }
    set.build().map_err(|e| e.to_string())
}

fn glob(pattern: &str) -> Result<globset::Glob, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("`{pattern}` is not a valid glob: {}", e.kind()))
}

#[cfg(test)]
mod tests {

    #[test]
    fn ask_need_routes_to_the_most_specific_scope() {
        let roles = vec![
            (
                "builder".to_string(),
                vec!["services/**".to_string()],
                vec![],
            ),
            (
                "dba".to_string(),
                vec!["services/checkout/migrations/**".to_string()],
                vec![],
            ),
            ("any".to_string(), vec![], vec![]),
        ];
        assert_eq!(
            super::route(&roles, "services/checkout/migrations/0042.sql"),
            Some("dba")
        );
        assert_eq!(
            super::route(&roles, "services/checkout/src/totals.rs"),
            Some("builder")
        );
        assert_eq!(
            super::route(&roles, "docs/readme.md"),
            None,
            "roles without scope never match"
        );
    }

    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn double_star_matches_zero_or_more_segments() {
        let scope = Scope::new(&s(&["services/checkout/**"]), &[]).expect("globs");
        assert!(scope.covers("services/checkout"));
        assert!(scope.covers("services/checkout/src/totals.rs"));
        assert!(!scope.covers("services"));
        assert!(!scope.covers("services/checkoutx/a.rs"));
        let mid = Scope::new(&s(&["a/**/b.rs"]), &[]).expect("globs");
        assert!(mid.covers("a/b.rs") && mid.covers("a/x/y/b.rs"));
    }

    #[test]
    fn star_stays_within_one_segment() {
        let scope = Scope::new(&s(&["docs/*.md", "src/?.rs"]), &[]).expect("globs");
        assert!(scope.covers("docs/a.md"));
        assert!(!scope.covers("docs/adr/a.md"));
        assert!(scope.covers("src/a.rs") && !scope.covers("src/ab.rs"));
    }

    #[test]
    fn out_of_scope_wins_and_empty_scope_covers_everything() {
        let builder = Scope::new(
            &s(&["services/checkout/**", "libs/money/**"]),
            &s(&["services/checkout/migrations/**"]),
        )
        .expect("globs");
        assert!(!builder.covers("services/checkout/migrations"));
        assert!(!builder.covers("services/checkout/migrations/001.sql"));
        let traces = s(&[
            "libs/money/src/lib.rs",
            "services/checkout/migrations/001.sql",
        ]);
        assert_eq!(
            builder.outside(&traces),
            vec!["services/checkout/migrations/001.sql"]
        );
        assert!(builder.outside(&[]).is_empty());
        let open = Scope::new(&[], &s(&["secret/**"])).expect("globs");
        assert!(open.covers("anything/at/all") && !open.covers("secret/x"));
        assert!(Scope::everything().covers("x"));
    }

    #[test]
    fn bad_globs_are_named() {
        let err = Scope::new(&s(&["src/[a"]), &[]).expect_err("unclosed class");
        assert!(err.contains("src/[a"), "{err}");
        assert!(check_glob("a/**").is_ok());
    }
}
