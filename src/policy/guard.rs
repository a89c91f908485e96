//! The class gate of the guard (COMMANDS.md §1.4 step 3): `ro` callers may read and append;
//! mutations and applies need `rw`.

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
}
