/**
 * `turnguard completions bash|zsh|fish`: a completion script for the subcommands and each
 * one's flags, generated from the same table as `--help`, so the two never disagree.
 */
import { UsageError } from "../errors.ts";
import { FLAG_VALUES, parseOptions } from "./args.ts";
import { stdoutSink } from "../io/output.ts";
import { COMMAND_HELP } from "./command_help.ts";

/** The shells a script is made for. */
export const SHELLS = ["bash", "zsh", "fish"] as const;
type Shell = typeof SHELLS[number];

const flagsOf = (name: string) => [...Object.keys(COMMAND_HELP[name].flags), "help"];

/** The bash script (zsh loads it too, through bashcompinit). */
function bashScript(): string {
  const cases = Object.keys(COMMAND_HELP).map((name) =>
    `    ${name}) flags="${flagsOf(name).map((f) => `--${f}`).join(" ")}" ;;`
  );
  return `# turnguard completion for bash: source it, or save it as
# ~/.local/share/bash-completion/completions/turnguard
_turnguard() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cmd=\${COMP_WORDS[1]} flags="" i
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${Object.keys(COMMAND_HELP).join(" ")} --help --version" -- "$cur"))
    return
  fi
  for ((i = 2; i < COMP_CWORD; i++)); do
    # after --, the words belong to the agent command
    if [ "\${COMP_WORDS[i]}" = "--" ]; then
      COMPREPLY=($(compgen -c -- "$cur"))
      return
    fi
  done
  case "$cmd" in
${cases.join("\n")}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  elif [ "$cmd" = completions ]; then
    COMPREPLY=($(compgen -W "${SHELLS.join(" ")}" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _turnguard turnguard
`;
}

function zshScript(): string {
  return `#compdef turnguard
# turnguard completion for zsh: eval "$(turnguard completions zsh)"
autoload -U +X bashcompinit && bashcompinit
${bashScript()}`;
}

function fishScript(): string {
  const names = Object.keys(COMMAND_HELP);
  const lines = [
    "# turnguard completion for fish: turnguard completions fish > " +
    "~/.config/fish/completions/turnguard.fish",
    "complete -c turnguard -f",
    ...names.map((name) =>
      `complete -c turnguard -n "not __fish_seen_subcommand_from ${names.join(" ")}" ` +
      `-a ${name} -d ${JSON.stringify(COMMAND_HELP[name].summary.split(/[.:;]/)[0])}`
    ),
    // -r: the flag takes a value (FLAG_VALUES), which fish then completes.
    ...names.flatMap((name) =>
      flagsOf(name).map((flag) =>
        `complete -c turnguard -n "__fish_seen_subcommand_from ${name}" -l ${flag}` +
        (FLAG_VALUES[flag] === undefined ? "" : " -r")
      )
    ),
    `complete -c turnguard -n "__fish_seen_subcommand_from completions" -a "${SHELLS.join(" ")}"`,
  ];
  return lines.join("\n") + "\n";
}

/** The completion script for one shell. */
export function completionScript(shell: Shell): string {
  return shell === "bash" ? bashScript() : shell === "zsh" ? zshScript() : fishScript();
}

/** Runs `turnguard completions SHELL`. */
export function completionsCommand(argv: string[]): number {
  const { positionals } = parseOptions("completions", argv, {}, true);
  const shell = positionals[0];
  if (positionals.length !== 1 || !SHELLS.includes(shell as Shell)) {
    throw new UsageError(
      `completions: expected one shell (${SHELLS.join(", ")}), got ${
        positionals.length === 0 ? "none" : `"${positionals.join(" ")}"`
      }`,
    );
  }
  void stdoutSink.text(completionScript(shell as Shell));
  return 0;
}
