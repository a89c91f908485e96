//! The project a command acts on when none is named: one rule for every command.

use super::Error;
use crate::model::project::ProjectHead;

/// The only active project, for every command whose `--project` defaults to it (`task add`,
/// `note add`, `burndown`, `glossary add|show`, `risk add`): with none the error says how to
/// make one, with several it lists them and shows the flag.
pub fn only_active<'a>(list: &'a [ProjectHead], what: &str) -> Result<&'a ProjectHead, Error> {
    let active: Vec<&ProjectHead> = list.iter().filter(|p| p.status == "active").collect();
    match active.as_slice() {
        [one] => Ok(one),
        [] => Err(Error::usage(format!(
            "{what} needs a project and this workspace has no active one"
        ))
        .hint(
            "create one with `dacli project add \"<what you are building>\"`, then run this again",
        )),
        many => {
            let slugs: Vec<&str> = many.iter().map(|p| p.slug.as_str()).collect();
            Err(Error::usage(format!(
                "{what} needs a project and {} are active ({}): pass --project",
                many.len(),
                slugs.join(", ")
            ))
            .hint(format!("for example `--project {}`", slugs[0])))
        }
    }
}
