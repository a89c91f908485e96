//! The definition of done (docs/FORMAT.md §13.3): a pure verdict over gathered facts. A
//! refusal lists every unmet condition, not only the first.

use crate::model::Refusal;
use crate::model::dod::{DodFacts, DodReport, Unmet};

/// Evaluates the four conditions in order: acceptance (with verification of command
/// criteria), the test shortcut, lint, the required note.
pub fn evaluate(f: &DodFacts) -> DodReport {
    let mut unmet = Vec::new();
    let r = &f.reference;
    if f.criteria.is_empty() {
        unmet.push(Unmet {
            policy: "dod.no_acceptance".into(),
            item: String::new(),
            detail: "the task has no acceptance criteria".into(),
            owner_only: false,
            next: format!(
                "Add criteria (owner: `dacli task edit {r} --accept \"…\"`); closing would verify nothing."
            ),
        });
    }
    let unchecked: Vec<_> = f.criteria.iter().filter(|c| !c.checked).collect();
    for c in &unchecked {
        unmet.push(Unmet {
            policy: "dod.unchecked_acceptance".into(),
            item: c.n.to_string(),
            detail: c.text.clone(),
            owner_only: false,
            next: format!(
                "Check {} with `dacli task check {r} --n {}` once they hold; if one is wrong, `dacli ask` — do not game it.",
                unchecked.iter().map(|c| c.n.to_string()).collect::<Vec<_>>().join(", "),
                c.n
            ),
        });
    }
    for c in f
        .criteria
        .iter()
        .filter(|c| c.checked && c.command.is_some() && !c.verified)
    {
        unmet.push(Unmet {
            policy: "dod.unverified_criterion".into(),
            item: c.n.to_string(),
            detail: format!("{} (checked without a verification record)", c.text),
            owner_only: false,
            next: format!(
                "`dacli task check {r} --n {} --verify`, as an rw agent.",
                c.n
            ),
        });
    }
    if let Some(t) = &f.test {
        match &t.latest {
            None => unmet.push(Unmet {
                policy: "dod.test_not_run".into(),
                item: t.shortcut.clone(),
                detail: format!("no run of `{}` for this task", t.shortcut),
                owner_only: false,
                next: format!("`dacli run {} --task {r}`.", t.shortcut),
            }),
            Some((event, code)) if *code != 0 => unmet.push(Unmet {
                policy: "dod.test_failed".into(),
                item: t.shortcut.clone(),
                detail: format!("the latest run (event {event}) exited {code}"),
                owner_only: false,
                next: format!(
                    "Run `{}` (event {event}) exited {code}: fix, then rerun with `--task {r}`.",
                    t.shortcut
                ),
            }),
            Some(_) => {}
        }
    }
    if let Some(errors) = &f.lint_errors
        && !errors.is_empty()
    {
        unmet.push(Unmet {
            policy: "dod.lint_failed".into(),
            item: f.path.clone(),
            detail: errors.join(", "),
            owner_only: false,
            next: format!(
                "Fix {} in {} (`dacli lint {}`).",
                errors.join(", "),
                f.path,
                f.path
            ),
        });
    }
    if let Some(n) = &f.note
        && !n.present
    {
        unmet.push(Unmet {
            policy: "dod.note_required".into(),
            item: n.kind.clone(),
            detail: format!("no {} note about this task", n.kind),
            owner_only: false,
            next: format!(
                "`dacli note add {} \"…\" --about {r}`.",
                note_kind_for_next(&n.kind)
            ),
        });
    }
    DodReport {
        passed: unmet.is_empty(),
        unmet,
    }
}

fn note_kind_for_next(kind: &str) -> &str {
    if kind == "any" { "finding" } else { kind }
}

/// The refusal for an unmet definition of done: `policy` is the first unmet condition, the
/// reason lists each as `- <policy>: <detail>`, and `next` says what to do for each.
pub fn refusal(report: &DodReport) -> Option<Refusal> {
    let first = report.unmet.first()?;
    let reason = report
        .unmet
        .iter()
        .map(|u| {
            if u.item.is_empty() {
                format!("- {}: {}", u.policy, u.detail)
            } else {
                format!("- {}: {} {}", u.policy, u.item, u.detail)
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut nexts: Vec<&str> = Vec::new();
    for u in &report.unmet {
        if !nexts.contains(&u.next.as_str()) {
            nexts.push(&u.next);
        }
    }
    Some(Refusal::new(first.policy.clone(), reason, nexts.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::dod::{CriterionFact, NoteFact, TestFact};

    fn facts() -> DodFacts {
        DodFacts {
            reference: "checkout/004-add-rounding-shim".into(),
            path: ".dacli/projects/checkout/tasks/active/004-add-rounding-shim.md".into(),
            criteria: vec![
                CriterionFact {
                    n: 1,
                    text: "shim".into(),
                    checked: true,
                    command: None,
                    verified: false,
                },
                CriterionFact {
                    n: 2,
                    text: "`./t.sh` passes".into(),
                    checked: false,
                    command: Some("./t.sh".into()),
                    verified: false,
                },
            ],
            test: Some(TestFact {
                shortcut: "test".into(),
                latest: None,
            }),
            lint_errors: Some(vec![]),
            note: Some(NoteFact {
                kind: "finding".into(),
                present: false,
            }),
        }
    }

    #[test]
    fn every_condition_alone_blocks_and_all_are_listed() {
        let report = evaluate(&facts());
        let policies: Vec<&str> = report.unmet.iter().map(|u| u.policy.as_str()).collect();
        assert_eq!(
            policies,
            vec![
                "dod.unchecked_acceptance",
                "dod.test_not_run",
                "dod.note_required"
            ]
        );
        let r = refusal(&report).expect("refused");
        assert_eq!(r.policy, "dod.unchecked_acceptance");
        assert_eq!(r.reason.lines().count(), 3);
        let mut ok = facts();
        ok.criteria[1].checked = true;
        ok.criteria[1].verified = true;
        ok.test = Some(TestFact {
            shortcut: "test".into(),
            latest: Some(("E".into(), 0)),
        });
        ok.note = Some(NoteFact {
            kind: "finding".into(),
            present: true,
        });
        assert!(evaluate(&ok).passed);
        ok.criteria[1].verified = false;
        assert_eq!(evaluate(&ok).unmet[0].policy, "dod.unverified_criterion");
        ok.criteria.clear();
        assert_eq!(evaluate(&ok).unmet[0].policy, "dod.no_acceptance");
    }
}
