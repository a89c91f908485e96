//! Who is calling: `DACLI_AGENT` resolved once per process (docs/FORMAT.md §6,
//! COMMANDS.md §1.3). Nothing ever falls back to root except an unset variable in a workspace
//! that does not require tokens.

use super::{Env, Error, ErrorKind};
use crate::model::Refusal;
use crate::model::agent::{Agent, AgentStatus, token_hash};
use crate::model::id::ROOT_AGENT;
use crate::objects;
use crate::workspace::Workspace;

/// How the caller was identified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IdentitySource {
    /// A token in `DACLI_AGENT`.
    Token,
    /// `DACLI_AGENT` unset: root by absence.
    Unset,
}

/// The resolved caller. Holds no token.
#[derive(Debug, Clone)]
pub struct Identity {
    pub agent: Agent,
    pub source: IdentitySource,
}

pub(super) fn empty_token_refusal(env: &Env) -> Option<Refusal> {
    (env.get("DACLI_AGENT") == Some("")).then(|| {
        Refusal::new(
            "identity.empty_token",
            "DACLI_AGENT is set but empty",
            "Restore the token you were launched with; an empty DACLI_AGENT never means root.",
        )
    })
}

/// A reference to `DACLI_AGENT` that an MCP client passed through unexpanded: Claude Code and
/// Gemini CLI leave `${DACLI_AGENT}` as literal text when the variable is unset where they run.
/// Such a value says "unset" and is read as unset: it can never be a token, and a workspace that
/// requires tokens still refuses it (`identity.token_required`).
fn unexpanded(value: &str) -> bool {
    matches!(
        value,
        "${DACLI_AGENT}" | "$DACLI_AGENT" | "${env:DACLI_AGENT}"
    )
}

/// Resolves the caller from the environment: `Ok(Err(refusal))` for a refused token.
pub(super) fn resolve(ws: &Workspace, env: &Env) -> Result<Result<Identity, Refusal>, Error> {
    if let Some(r) = empty_token_refusal(env) {
        return Ok(Err(r));
    }
    let Some(token) = env.get("DACLI_AGENT").filter(|v| !unexpanded(v)) else {
        if ws.config.require_token {
            return Ok(Err(Refusal::new(
                "identity.token_required",
                "DACLI_AGENT is unset and this workspace requires a token (policy.require_token)",
                "Set DACLI_AGENT to your token; this workspace has no anonymous root.",
            )));
        }
        let agent = load_root(ws)?;
        return Ok(Ok(Identity {
            agent,
            source: IdentitySource::Unset,
        }));
    };
    let unknown = || {
        Refusal::new(
            "identity.unknown_token",
            "DACLI_AGENT does not hold a valid token for this workspace",
            "Ask whoever launched you for your token (a-root lists the live agents with `dacli agent list` and issues new ones with `dacli agent spawn`); never unset DACLI_AGENT to act as root.",
        )
    };
    let Some(agent_id) = agent_id_of(token) else {
        return Ok(Err(unknown()));
    };
    let agent = match objects::agents::load(ws, agent_id) {
        Ok(a) => a,
        Err(objects::Error::NotFound { .. }) => return Ok(Err(unknown())),
        Err(e) => return Err(e.into()),
    };
    let Some(stored) = agent.token_hash.as_deref() else {
        return Ok(Err(unknown()));
    };
    if !constant_time_eq(stored.as_bytes(), token_hash(token).as_bytes()) {
        return Ok(Err(unknown()));
    }
    if agent.status == AgentStatus::Retired {
        let by = agent.retired_by.clone().unwrap_or_else(|| "?".into());
        let parent = agent.parent.clone().unwrap_or_else(|| ROOT_AGENT.into());
        return Ok(Err(Refusal::new(
            "identity.retired",
            format!("agent {} is retired", agent.id),
            format!(
                "{} was retired by {by} at {}: stop and report to {parent}.",
                agent.id,
                agent.retired_at_text()
            ),
        )));
    }
    Ok(Ok(Identity {
        agent,
        source: IdentitySource::Token,
    }))
}

fn load_root(ws: &Workspace) -> Result<Agent, Error> {
    objects::agents::load(ws, ROOT_AGENT).map_err(|e| match e {
        objects::Error::NotFound { .. } => Error::new(
            ErrorKind::Operational,
            "E_MALFORMED",
            format!(
                "{} is missing; every workspace has a root agent record",
                ws.display(&ws.path(&["agents", "a-root.md"]))
            ),
        )
        .hint("restore it from git (`git checkout -- .dacli/agents/a-root.md`)"),
        other => other.into(),
    })
}

/// The agent id inside a token `dacli_<agent-id>_<secret>`: between the first and last `_`.
fn agent_id_of(token: &str) -> Option<&str> {
    let rest = token.strip_prefix("dacli_")?;
    let (id, secret) = rest.rsplit_once('_')?;
    (!id.is_empty() && secret.len() == 64).then_some(id)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_token_hashes_to_the_documented_digest() {
        let token = "dacli_a-builder-01KJPX6ZT81TTNRTABC9KBJYTV_21da8978206f5c6671e0c07e9e115e4b9e30691c238642ea126a1e48cc11d357";
        assert_eq!(
            token_hash(token),
            "sha256:0ec70fa2882d3c1af7d94fb130f2c1393f2c80ffb92e9538ecc21da7f8205ea6"
        );
        assert_eq!(
            agent_id_of(token),
            Some("a-builder-01KJPX6ZT81TTNRTABC9KBJYTV")
        );
        assert_eq!(agent_id_of("dacli_x"), None);
    }
}
