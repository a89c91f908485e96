//! The presets of `runtime add`: each written from the tool's documented command-line flags.
//! A preset is a declaration, not a promise: `runtime doctor` checks every flag named here
//! against the installed binary's `--help`, so a flag a release drops shows up as absent.

/// One preset: the adapter's keys and the body that records the flags relied on and the
/// tool's quirks.
pub(super) struct Preset {
    pub name: &'static str,
    pub summary: &'static str,
    /// `None`: the caller must give `--binary`.
    pub binary: Option<&'static str>,
    pub help: &'static [&'static [&'static str]],
    pub prompt: &'static str,
    pub invoke: &'static [(&'static str, &'static [&'static str])],
    pub capabilities: &'static [&'static str],
    pub dangerous: &'static [&'static str],
    pub env: &'static [&'static str],
    /// `(file, format, key, env)` of `mcp_config`.
    pub mcp: Option<(&'static str, &'static str, &'static str, &'static str)>,
    pub notes: &'static str,
}

/// The preset names, as `--preset` accepts them.
pub(super) const NAMES: [&str; 4] = ["claude-code", "codex", "gemini", "generic-exec"];

/// The preset `name` (one of [`NAMES`]).
pub(super) fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

const PRESETS: [Preset; 4] = [
    Preset {
        name: "claude-code",
        summary: "Claude Code, Anthropic's coding agent CLI",
        binary: Some("claude"),
        help: &[&["--help"]],
        prompt: "argument",
        invoke: &[
            ("non_interactive", &["--print"]),
            ("read_only_sandbox", &["--permission-mode", "plan"]),
            ("json_output", &["--output-format", "json"]),
            ("mcp", &["--mcp-config"]),
        ],
        capabilities: &["non_interactive", "read_only_sandbox", "json_output", "mcp"],
        dangerous: &["--dangerously-skip-permissions"],
        env: &["ANTHROPIC_API_KEY", "DACLI_AGENT"],
        mcp: Some((".mcp.json", "json", "mcpServers", "${VAR}")),
        notes: "\
Preset `claude-code`, written from the documented flags of Claude Code's `claude` command:

- `--print` (`-p`): answer the prompt given as the argument and exit; the non-interactive mode.
- `--permission-mode plan`: plan mode reads and proposes but edits no file and runs no
  command; the read-only mode.
- `--output-format json`: one JSON result on stdout (only together with `--print`).
- `--mcp-config FILE`: load MCP servers from a JSON file (or string) for this run.
- `--dangerously-skip-permissions` skips every permission check. It is listed in `dangerous`:
  dacli never passes it, not even to a probe; nor `--permission-mode bypassPermissions`.

Quirks: a project's MCP servers live in `.mcp.json` at the repository root, where `${VAR}`
is expanded from the environment, and Claude Code asks once before it trusts a project
server. `claude --version` prints `X.Y.Z (Claude Code)`.
",
    },
    Preset {
        name: "codex",
        summary: "Codex CLI, OpenAI's coding agent",
        binary: Some("codex"),
        help: &[&["--help"], &["exec", "--help"]],
        prompt: "argument",
        invoke: &[
            ("non_interactive", &["exec"]),
            ("read_only_sandbox", &["--sandbox", "read-only"]),
            ("json_output", &["--json"]),
            ("mcp", &["--config"]),
        ],
        capabilities: &["non_interactive", "read_only_sandbox", "json_output", "mcp"],
        dangerous: &["--dangerously-bypass-approvals-and-sandbox"],
        env: &["OPENAI_API_KEY", "DACLI_AGENT"],
        mcp: Some((".codex/config.toml", "toml", "mcp_servers", "names")),
        notes: "\
Preset `codex`, written from the documented flags of the `codex` command:

- `exec`: the non-interactive subcommand; the prompt is its argument (`-` reads it from
  stdin).
- `--sandbox read-only` (`-s`): commands the agent runs may read but not write.
- `--json`: `codex exec` prints its events as JSON lines. It belongs to `exec`, hence the
  second help probe, `codex exec --help`.
- `--config key=value` (`-c`): overrides one configuration key for a run; MCP servers are
  the `mcp_servers.<name>` tables of that configuration.
- `--dangerously-bypass-approvals-and-sandbox` (also `--yolo`) and `--sandbox
  danger-full-access` lift every guard; dacli never passes them, not even to a probe.

Quirks: MCP servers are registered in `config.toml` (`~/.codex/config.toml`, or
`.codex/config.toml` of a trusted project), where `env_vars` forwards variables by name.
`codex exec` refuses to run outside a git repository. `codex --version` prints
`codex-cli X.Y.Z`.
",
    },
    Preset {
        name: "gemini",
        summary: "Gemini CLI, Google's coding agent",
        binary: Some("gemini"),
        help: &[&["--help"]],
        prompt: "argument",
        invoke: &[
            ("non_interactive", &["--prompt"]),
            ("json_output", &["--output-format", "json"]),
            ("mcp", &["--allowed-mcp-server-names"]),
            ("sandbox", &["--sandbox"]),
        ],
        capabilities: &["non_interactive", "json_output", "mcp", "sandbox"],
        dangerous: &["--yolo", "-y"],
        env: &["GEMINI_API_KEY", "DACLI_AGENT"],
        mcp: Some((".gemini/settings.json", "json", "mcpServers", "${VAR}")),
        notes: "\
Preset `gemini`, written from the documented flags of the `gemini` command:

- `--prompt` (`-p`): run the prompt given as its value and exit; the non-interactive mode
  (text piped on stdin is added to it).
- `--output-format json`: one JSON result on stdout (recent releases only: doctor says
  whether the installed one has it).
- `--allowed-mcp-server-names NAME...`: limit a run to the named MCP servers of the settings.
- `--sandbox` (`-s`): run tools in a container or sandbox profile. Tools may still write
  inside it, so it is declared as `sandbox`, not as `read_only_sandbox`: Gemini CLI has no
  read-only mode, and without `--yolo` a non-interactive run does not get tools that need
  approval.
- `--yolo` (`-y`) and `--approval-mode yolo` approve every tool call; dacli never passes
  them, not even to a probe.

Quirks: MCP servers live under `mcpServers` in `.gemini/settings.json` (or
`~/.gemini/settings.json`), where `$VAR` and `${VAR}` are expanded from the environment.
",
    },
    Preset {
        name: "generic-exec",
        summary: "Any command that reads a prompt on stdin",
        binary: None,
        help: &[&["--help"]],
        prompt: "stdin",
        invoke: &[],
        capabilities: &[],
        dangerous: &[],
        env: &["DACLI_AGENT"],
        mcp: None,
        notes: "\
Preset `generic-exec`: any command. dacli assumes only that it reads the prompt on stdin and
answers `--version` and `--help`. Nothing is declared, so `runtime doctor` reports every
capability absent until it is: add its name to `capabilities` and the flags that provide it
as `invoke.<capability>`, and doctor checks them against `--help`. List flags that lift the
command's permission checks in `dangerous`, so that dacli never passes them.
",
    },
];
