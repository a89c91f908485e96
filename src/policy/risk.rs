//! The risk action rule (docs/FORMAT.md §16): a rank-1 or rank-2 risk must say how it will be
//! noticed (`## Indicators`) and what is done about it (`## Action`). dacli refuses to create or
//! rewrite a risk that breaks this.

use crate::model::Refusal;
use crate::model::risk::{needs_action, rank};

/// The refusal for a risk with these levels and sections, if it breaks the action rule.
pub fn action_refusal(
    impact: &str,
    likelihood: &str,
    has_indicators: bool,
    has_action: bool,
) -> Option<Refusal> {
    let rank = rank(impact, likelihood);
    if !needs_action(rank) || (has_indicators && has_action) {
        return None;
    }
    let missing: Vec<&str> = [
        (!has_indicators).then_some("`## Indicators` (--indicator)"),
        (!has_action).then_some("`## Action` (--action)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    Some(Refusal::new(
        "risk.action_required",
        format!(
            "a risk with impact {impact} and likelihood {likelihood} is rank {rank}, and ranks 1 and 2 need non-empty indicators and an action; missing: {}",
            missing.join(" and ")
        ),
        "Add `--indicator \"…\"` and `--action \"…\"`, or lower impact/likelihood if that is the truth.",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_one_and_two_need_both_sections() {
        assert!(action_refusal("high", "high", true, true).is_none());
        assert!(action_refusal("low", "high", false, false).is_none());
        let r = action_refusal("high", "medium", true, false).expect("refused");
        assert_eq!(r.policy, "risk.action_required");
        assert!(r.reason.contains("rank 2") && r.reason.contains("--action"));
        assert!(!r.reason.contains("--indicator"), "{}", r.reason);
        let r = action_refusal("high", "high", false, false).expect("refused");
        assert!(r.reason.contains("rank 1") && r.reason.contains("--indicator"));
    }
}
