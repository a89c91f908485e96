//! The guard's pure decisions (COMMANDS.md §1.4): the class gate (step 3: `ro` callers may
//! read and append; mutations and applies need `rw`) and the role gates (step 6: toolkit, WIP
//! cap, scope), plus the effect gates of `run`.

use crate::model::role::Role;
use crate::model::shortcut::{Effect, Shortcut};
use crate::model::{Grant, Refusal};

/// Refuses a write-class command (`needs_rw`) for an `ro` caller. `command` is the CLI path
/// (`task edit`), `ask` the agent to turn to (the owner of the object, else the caller's
/// parent), and `alternative`, when the command has a sharper one, replaces the generic
/// suggestion to record a finding.
pub fn class_gate(
    grant: Grant,
    needs_rw: bool,
    command: &str,
    ask: &str,
    alternative: Option<&str>,
) -> Option<Refusal> {
    if !needs_rw || grant == Grant::Rw {
        return None;
    }
    let instead = alternative.unwrap_or("record what you know with `dacli note add finding`");
    Some(Refusal::new(
        "grant.read_only",
        format!("`dacli {command}` changes the workspace and your grant is ro"),
        format!("`dacli {command}` needs rw: ask {ask} to run it, or {instead}."),
    ))
}

/// `role.wip_cap`: taking one more task would put role `role` beyond its `wip` cap. `active`
/// are the references of the folded active tasks whose assignee holds the role; the cap is
/// reached when there are at least `wip` of them. No cap (0) never refuses.
pub fn wip_cap(role: &Role, active: &[String]) -> Option<Refusal> {
    let cap = role.wip as usize;
    if cap == 0 || active.len() < cap {
        return None;
    }
    let n = active.len();
    let refs = active.join(", ");
    Some(Refusal::new(
        "role.wip_cap",
        format!(
            "role {} already has {n} active tasks; its cap is {cap}",
            role.name
        ),
        format!(
            "Role {} has {n}/{cap} active tasks ({refs}): finish or `dacli task release` one, or ask {} to raise `wip`.",
            role.name, role.owner
        ),
    ))
}

/// `role.out_of_scope`: `outside` are the task's traces the role does not cover (empty: in
/// scope). `instead` ends the `next` text: for a claim, who can assign a covering role (the
/// task's owner); for an assignment, what the assigning owner can do.
pub fn out_of_scope(
    role: &Role,
    reference: &str,
    outside: &[&str],
    instead: &str,
) -> Option<Refusal> {
    if outside.is_empty() {
        return None;
    }
    let paths = outside.join(", ");
    let ask = match role.escalate_to.first() {
        Some(to) => format!("`dacli ask {reference} \"…\" --to {to}`"),
        None => format!("`dacli ask {reference} \"…\"`"),
    };
    Some(Refusal::new(
        "role.out_of_scope",
        format!(
            "{reference} traces {paths}, outside the scope of role {}",
            role.name
        ),
        format!(
            "{paths} are outside role {}: {ask}, or {instead}.",
            role.name
        ),
    ))
}

/// Who is running a shortcut, as the gates of `run` see it.
#[derive(Debug, Clone, Copy)]
pub struct Runner<'a> {
    /// Root is exempt from the toolkit and the shortcut's `roles`.
    pub is_root: bool,
    pub grant: Grant,
    /// The caller's role; `None` without one (or when its file is missing).
    pub role: Option<&'a Role>,
    /// Where to send the caller instead: its role's first `escalate_to`, else its parent.
    pub ask: &'a str,
}

/// Whether `shortcut` is in the caller's toolkit: the role's `shortcuts`, or every
/// `effect = "read"` shortcut when that list is empty or there is no role (FORMAT §7); and the
/// shortcut's `roles`, when not empty, name the caller's role.
pub fn in_toolkit(role: Option<&Role>, shortcut: &Shortcut) -> bool {
    let by_role = match role {
        Some(r) if !r.shortcuts.is_empty() => r.shortcuts.contains(&shortcut.name),
        _ => shortcut.effect == Some(Effect::Read),
    };
    let by_shortcut =
        shortcut.roles.is_empty() || role.is_some_and(|r| shortcut.roles.contains(&r.name));
    by_role && by_shortcut
}

/// The gates of `run` in COMMANDS.md §10 order, up to (not including) parameters:
/// `shortcut.no_effect`, `shortcut.not_in_toolkit`, `grant.read_only` (the gate is by effect:
/// an `ro` caller runs read shortcuts), `shortcut.unconfirmed_destructive`. `toolkit` is the
/// caller's toolkit as names, for the refusal text.
pub fn shortcut_gate(
    runner: &Runner<'_>,
    shortcut: &Shortcut,
    toolkit: &[String],
    confirmed: bool,
) -> Option<Refusal> {
    let name = &shortcut.name;
    let Some(effect) = shortcut.effect else {
        return Some(Refusal::new(
            "shortcut.no_effect",
            format!("{name} has no valid `effect`, so it never runs"),
            format!(
                "{name} never runs until {} sets `effect` to read, write or destructive.",
                shortcut.owner
            ),
        ));
    };
    if !runner.is_root && !in_toolkit(runner.role, shortcut) {
        let who = runner
            .role
            .map_or("An agent without a role".to_string(), |r| {
                format!("Role {}", r.name)
            });
        let may = if toolkit.is_empty() {
            "no shortcut".to_string()
        } else {
            toolkit.join(", ")
        };
        let why = if shortcut.roles.is_empty()
            || runner
                .role
                .is_some_and(|r| shortcut.roles.contains(&r.name))
        {
            "it is not in your toolkit".to_string()
        } else {
            format!("it is only for roles {}", shortcut.roles.join(", "))
        };
        return Some(Refusal::new(
            "shortcut.not_in_toolkit",
            format!("you may not run {name}: {why}"),
            format!("{who} may run {may}; ask {} to run {name}.", runner.ask),
        ));
    }
    if runner.grant == Grant::Ro && effect != Effect::Read {
        return Some(Refusal::new(
            "grant.read_only",
            format!("{name} has effect {} and your grant is ro", effect.as_str()),
            format!("`dacli run {name}` needs rw: ask {} to run it.", runner.ask),
        ));
    }
    if effect == Effect::Destructive && !confirmed {
        return Some(Refusal::new(
            "shortcut.unconfirmed_destructive",
            format!("{name} is destructive and the run is not confirmed"),
            format!(
                "Add `--confirmed` to `dacli run {name}` only if the task text or a human instruction asks for this; otherwise `dacli ask`."
            ),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ro_is_refused_only_for_writes() {
        assert!(class_gate(Grant::Ro, false, "status", "a-root", None).is_none());
        assert!(class_gate(Grant::Rw, true, "doctor --fix", "a-root", None).is_none());
        let r = class_gate(Grant::Ro, true, "doctor --fix", "a-root", None).expect("refused");
        assert_eq!(r.policy, "grant.read_only");
        assert!(r.next.contains("a-root"), "{}", r.next);
    }

    fn role(shortcuts: &[&str], wip: u32) -> Role {
        Role {
            name: "builder".into(),
            summary: "s".into(),
            grant: Grant::Rw,
            scope: vec![],
            out_of_scope: vec![],
            shortcuts: shortcuts.iter().map(|s| s.to_string()).collect(),
            escalate_to: vec!["architect".into()],
            wip,
            owner: "a-root".into(),
        }
    }

    fn shortcut(name: &str, effect: Option<Effect>, roles: &[&str]) -> Shortcut {
        Shortcut {
            name: name.into(),
            created: "2026-03-02T09:00:00Z".parse().expect("time"),
            created_by: "a-root".into(),
            owner: "a-root".into(),
            summary: "s".into(),
            command: "true".into(),
            effect,
            params: vec![],
            roles: roles.iter().map(|s| s.to_string()).collect(),
            dir: None,
        }
    }

    #[test]
    fn wip_cap_counts_against_the_cap() {
        let r = role(&[], 2);
        assert!(wip_cap(&r, &["a/001-x".into()]).is_none());
        let refused = wip_cap(&r, &["a/001-x".into(), "a/002-y".into()]).expect("at cap");
        assert_eq!(refused.policy, "role.wip_cap");
        assert!(refused.next.contains("2/2") && refused.next.contains("a/002-y"));
        assert!(wip_cap(&role(&[], 0), &vec!["a".to_string(); 9]).is_none());
    }

    #[test]
    fn scope_refusal_names_paths_and_escalation() {
        let r = role(&[], 0);
        assert!(out_of_scope(&r, "a/001-x", &[], "x").is_none());
        let refused = out_of_scope(&r, "a/001-x", &["db/m.sql"], "ask a-root").expect("out");
        assert_eq!(refused.policy, "role.out_of_scope");
        assert!(refused.next.contains("--to architect") && refused.next.contains("db/m.sql"));
    }

    #[test]
    fn shortcut_gates_in_order() {
        let runner = |role: Option<&'static Role>, grant| Runner {
            is_root: false,
            grant,
            role,
            ask: "architect",
        };
        let r: &'static Role = Box::leak(Box::new(role(&["fmt", "test"], 0)));
        let gate = |run: &Runner<'_>, s: &Shortcut, confirmed| {
            shortcut_gate(run, s, &[], confirmed).map(|r| r.policy)
        };
        let rw = runner(Some(r), Grant::Rw);
        let ro = runner(Some(r), Grant::Ro);
        assert_eq!(
            gate(&rw, &shortcut("test", None, &[]), false).as_deref(),
            Some("shortcut.no_effect")
        );
        assert_eq!(
            gate(&rw, &shortcut("lint", Some(Effect::Read), &[]), false).as_deref(),
            Some("shortcut.not_in_toolkit")
        );
        assert_eq!(
            gate(
                &rw,
                &shortcut("fmt", Some(Effect::Write), &["architect"]),
                false
            )
            .as_deref(),
            Some("shortcut.not_in_toolkit")
        );
        assert_eq!(
            gate(&ro, &shortcut("fmt", Some(Effect::Write), &[]), false).as_deref(),
            Some("grant.read_only")
        );
        assert_eq!(
            gate(&ro, &shortcut("test", Some(Effect::Read), &[]), false),
            None
        );
        assert_eq!(
            gate(
                &rw,
                &shortcut("test", Some(Effect::Destructive), &[]),
                false
            )
            .as_deref(),
            Some("shortcut.unconfirmed_destructive")
        );
        assert_eq!(
            gate(&rw, &shortcut("test", Some(Effect::Destructive), &[]), true),
            None
        );
        let root = Runner {
            is_root: true,
            ..rw
        };
        assert_eq!(
            gate(
                &root,
                &shortcut("x", Some(Effect::Write), &["nobody"]),
                false
            ),
            None
        );
        // Without a role, the toolkit is every read shortcut.
        let bare = runner(None, Grant::Rw);
        assert_eq!(
            gate(&bare, &shortcut("x", Some(Effect::Read), &[]), false),
            None
        );
        assert_eq!(
            gate(&bare, &shortcut("x", Some(Effect::Write), &[]), false).as_deref(),
            Some("shortcut.not_in_toolkit")
        );
    }
}
