//! The release train's pure refusals (GIT_GITHUB.md): a train promotes one exact commit, so
//! it never publishes, never rewrites the commit, never takes over a branch it does not own,
//! and lands only by someone in the project's `merge_authority`.

use crate::model::Refusal;

/// A train never tags, releases or publishes: `--tag` is refused.
pub fn publication(tag: Option<&str>) -> Option<Refusal> {
    tag.map(|t| {
        Refusal::new(
            "train.no_publication",
            format!("a release train promotes a commit; it never tags (`{t}`), creates releases or publishes"),
            "Land the train, then tag or release with your own release process.",
        )
    })
}

/// A merge method that writes new commits is refused; `Err` names a method that is none of
/// the four (a usage error).
pub fn method(method: &str) -> Result<Option<Refusal>, String> {
    match method {
        "merge" | "fast_forward" => Ok(None),
        "squash" | "rebase" => Ok(Some(Refusal::new(
            "train.method_rewrites_sha",
            format!(
                "`{method}` writes new commits, so the exact commit could never be proven promoted"
            ),
            "Use `--method merge` (a merge commit) or `--method fast_forward` (the target becomes the commit).",
        ))),
        other => Err(format!(
            "`--method {other}` is not one of merge, fast_forward"
        )),
    }
}

/// The train's branch exists and points elsewhere: someone else owns it.
pub fn ref_conflict(branch: &str, sha: &str) -> Refusal {
    Refusal::new(
        "train.ref_conflict",
        format!("`{branch}` exists and does not point at {sha}"),
        format!(
            "Someone else owns `{branch}`: delete it after checking it is not in use, or plan another commit."
        ),
    )
}

/// `me` lands only when listed in the project's `merge_authority` (`authority`).
pub fn authority(me: &str, slug: &str, authority: &[String]) -> Option<Refusal> {
    if authority.iter().any(|a| a == me) {
        return None;
    }
    let who = if authority.is_empty() {
        "nobody is listed".to_string()
    } else {
        authority.join(", ")
    };
    Some(Refusal::new(
        "merge.no_authority",
        format!("{me} is not in the merge_authority of p-{slug} ({who})"),
        if authority.is_empty() {
            format!("Ask a-root to add you: `dacli project edit {slug} --merge-authority {me}`.")
        } else {
            format!(
                "Ask one of {who} to land it, or a-root to add you: `dacli project edit {slug} --merge-authority {me}`."
            )
        },
    ))
}

/// The PR number GitHub writes into merge and squash subjects: `Merge pull request #12 from`
/// or `Title (#12)`.
pub fn pr_number(subject: &str) -> Option<u64> {
    let digits = |s: &str| -> Option<u64> {
        let d: String = s.chars().take_while(char::is_ascii_digit).collect();
        d.parse().ok()
    };
    if let Some(rest) = subject.strip_prefix("Merge pull request #") {
        return digits(rest);
    }
    let at = subject.rfind("(#")?;
    subject[at + 2..]
        .ends_with(')')
        .then(|| digits(&subject[at + 2..]))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pr_numbers_come_from_merge_and_squash_subjects_only() {
        assert_eq!(pr_number("Merge pull request #12 from a/b"), Some(12));
        assert_eq!(pr_number("Fix the parser (#7)"), Some(7));
        assert_eq!(pr_number("Fix the parser (#7) again"), None);
        assert_eq!(pr_number("Fix #7"), None);
    }

    #[test]
    fn only_listed_identities_land() {
        let list = vec!["a-one".to_string()];
        assert!(authority("a-one", "p", &list).is_none());
        let r = authority("a-two", "p", &list).map(|r| r.policy);
        assert_eq!(r.as_deref(), Some("merge.no_authority"));
        assert!(method("squash").is_ok_and(|r| r.is_some()));
        assert!(method("octopus").is_err());
    }
}
