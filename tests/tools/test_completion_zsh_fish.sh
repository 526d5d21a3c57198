#!/usr/bin/env bash
# The zsh and fish completion scripts (generated at build time by `fsdpx completion zsh|fish`): each parses
# in its shell, is what the command prints, and offers every subcommand of `fsdpx --help`, a subcommand's
# own options and not another's, and the shipped model names after --model. zsh's completion builtins
# (compadd, _describe, _files) are replaced by functions that print their candidates, so the function runs
# outside an interactive completion; fish answers `complete -C` itself. A shell that is missing is skipped
# (exit 77 when both are).
set -u
FSDPX="$1"
ZSH_SCRIPT="$2"
FISH_SCRIPT="$3"
source "$(dirname "$0")/cli_check.sh"

subs=$("$FSDPX" --help | awk '/^Subcommands:/ {on = 1; next} on && NF {print $1}')
[ -n "$subs" ]; check "fsdpx --help lists subcommands" $?
ran=0

if command -v zsh >/dev/null; then
  ran=1
  zsh -n "$ZSH_SCRIPT"; check "zsh: the script parses" $?
  cmp -s "$ZSH_SCRIPT" <("$FSDPX" completion zsh); check "zsh: the built script is what fsdpx completion zsh prints" $?
  zsh_complete() {  # words of the command line, the last one being completed -> candidates, one per line
    zsh -fc '
      compdef() { print -r -- "compdef $*" >&2 }
      compadd() { local a; for a in "$@"; do [[ $a == -- ]] || print -r -- $a; done }
      _describe() { local e; for e in "${(@P)2}"; do print -r -- ${e%%:*}; done }
      _files() { print -r -- "<files>" }
      source "$1"; shift
      words=("$@"); CURRENT=$#; PREFIX=${words[CURRENT]}
      _fsdpx' _ "$ZSH_SCRIPT" "$@" 2>/dev/null
  }
  zsh -fc 'compdef() { print -r -- "compdef $*" }; source "$1"' _ "$ZSH_SCRIPT" | grep -qx "compdef _fsdpx fsdpx"
  check "zsh: sourcing registers _fsdpx for fsdpx" $?
  offered=$(zsh_complete fsdpx "")
  missing=""
  for s in $subs; do grep -qx -- "$s" <<<"$offered" || missing="$missing $s"; done
  [ -z "$missing" ]; check "zsh: every subcommand is offered (missing:$missing)" $?
  zsh_complete fsdpx plan --mo | grep -qx -- --model; check "zsh: plan - offers --model" $?
  ! zsh_complete fsdpx plan --te | grep -qx -- --temperature; check "zsh: plan does not offer sample's options" $?
  zsh_complete fsdpx sample --te | grep -qx -- --temperature; check "zsh: sample - offers --temperature" $?
  zsh_complete fsdpx plan --model "" | grep -qx -- llama-tiny; check "zsh: --model offers llama-tiny" $?
  zsh_complete fsdpx run --backend "" | grep -qx -- cuda; check "zsh: --backend offers cuda" $?
  zsh_complete fsdpx plan -o "" | grep -qx -- "<files>"; check "zsh: -o offers file names" $?
else
  echo "SKIP zsh: not installed"
fi

if command -v fish >/dev/null; then
  ran=1
  fish --no-execute "$FISH_SCRIPT"; check "fish: the script parses" $?
  cmp -s "$FISH_SCRIPT" <("$FSDPX" completion fish); check "fish: the built script is what fsdpx completion fish prints" $?
  fish_complete() {  # a command line -> the candidates fish offers, one per line (descriptions cut)
    fish --no-config -c "source \$argv[1]; complete -C \$argv[2]" "$FISH_SCRIPT" "$1" | cut -f1
  }
  offered=$(fish_complete "fsdpx ")
  missing=""
  for s in $subs; do grep -qx -- "$s" <<<"$offered" || missing="$missing $s"; done
  [ -z "$missing" ]; check "fish: every subcommand is offered (missing:$missing)" $?
  [ "$(fish_complete "fsdpx pl")" = plan ]; check "fish: pl -> plan" $?
  fish_complete "fsdpx plan --mo" | grep -qx -- --model; check "fish: plan --mo -> --model" $?
  ! fish_complete "fsdpx plan --te" | grep -qx -- --temperature; check "fish: plan does not offer sample's options" $?
  fish_complete "fsdpx sample --te" | grep -qx -- --temperature; check "fish: sample --te -> --temperature" $?
  [ "$(fish_complete "fsdpx plan --model llama-ti")" = llama-tiny ]; check "fish: --model llama-ti -> llama-tiny" $?
  [ "$(fish_complete "fsdpx run --backend c" | sort | tr '\n' ' ')" = "cpu cuda " ]; check "fish: --backend c -> cpu cuda" $?
else
  echo "SKIP fish: not installed"
fi

[ $ran = 1 ] || exit 77
finish
