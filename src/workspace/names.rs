//! Names that become path segments, and repository paths (docs/FORMAT.md §2 "Values").
//!
//! Everything here is pure; it lives in the workspace layer because it is what keeps paths
//! built from input inside the workspace.

/// Why a name was rejected, in words fit for an error message.
pub type Rejection = String;

const SLUG_MAX: usize = 64;

/// Checks a slug: `[a-z0-9][a-z0-9-]{0,63}`, hence a single safe path segment.
pub fn check_slug(s: &str) -> Result<(), Rejection> {
    let bytes = s.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= SLUG_MAX
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a slug: use 1-64 characters from a-z, 0-9 and `-`, starting with a letter or digit",
            s.escape_debug()
        ))
    }
}

/// Makes a slug from a title: lower-cased ASCII letters and digits kept, every other run of
/// characters turned into one `-`, trimmed, cut to 64 and trimmed again; `untitled` if empty.
pub fn slugify(title: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in title.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c);
        } else {
            dash = true;
        }
    }
    out.truncate(SLUG_MAX);
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "untitled".to_string()
    } else {
        out
    }
}

/// True for a name that can be joined as one path segment without leaving its directory:
/// non-empty, not `.` or `..`, no separator, no NUL, not hidden.
pub fn is_safe_segment(s: &str) -> bool {
    !s.is_empty() && !s.starts_with('.') && !s.contains(['/', '\\', '\0']) && s != ".."
}

/// Checks a repository path: relative, `/`-separated, no empty, `.` or `..` segment, no
/// leading `/`, no NUL.
pub fn check_repo_path(s: &str) -> Result<(), Rejection> {
    let bad = s.is_empty()
        || s.starts_with('/')
        || s.contains(['\\', '\0'])
        || s.split('/')
            .any(|seg| seg.is_empty() || seg == "." || seg == "..");
    if bad {
        Err(format!(
            "`{}` is not a repository path: give a relative `/`-separated path inside the work tree, without `.` or `..` segments",
            s.escape_debug()
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        for good in ["a", "0", "checkout", "a-b-", "x".repeat(64).as_str()] {
            assert!(check_slug(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "-a",
            "A",
            "a/b",
            "..",
            ".",
            "a b",
            "é",
            "a_b",
            "x".repeat(65).as_str(),
        ] {
            assert!(check_slug(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn slugify_follows_the_format_rule() {
        assert_eq!(slugify("Add the rounding shim!"), "add-the-rounding-shim");
        assert_eq!(slugify("  --Ünïcode & Co-- "), "n-code-co");
        assert_eq!(slugify("???"), "untitled");
        let long = slugify(&format!("{} tail", "a".repeat(63)));
        assert_eq!(long, "a".repeat(63));
    }

    #[test]
    fn repo_paths() {
        assert!(check_repo_path("services/checkout/src/totals.rs").is_ok());
        for bad in ["", "/etc", "a//b", "a/../b", "./a", "a/.", "a\\b"] {
            assert!(check_repo_path(bad).is_err(), "{bad}");
        }
    }
}
