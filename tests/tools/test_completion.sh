#!/usr/bin/env bash
# The bash completion script (generated at build time by `fsdpx completion bash`): it loads in bash,
# registers itself for fsdpx, offers every subcommand that `fsdpx --help` lists, and completes options
# per subcommand and the shipped model names after --model. Leaves out interactive readline behaviour.
set -u
FSDPX="$1"
SCRIPT="$2"
source "$(dirname "$0")/cli_check.sh"

bash -n "$SCRIPT"; check "the script parses" $?
cmp -s "$SCRIPT" <("$FSDPX" completion bash); check "the built script is what fsdpx completion bash prints" $?
complete_line() {  # words of the command line; the last one is being completed -> candidates, one per line
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _fsdpx 2>/dev/null; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$SCRIPT" "$@"
}
bash -c 'source "$1"; complete -p fsdpx' _ "$SCRIPT" | grep -q -- "-F _fsdpx fsdpx"
check "registers _fsdpx for fsdpx" $?

subs=$("$FSDPX" --help | awk '/^Subcommands:/ {on = 1; next} on && NF {print $1}')
offered=$(complete_line fsdpx "")
missing=""
for s in $subs; do grep -qx -- "$s" <<<"$offered" || missing="$missing $s"; done
[ -n "$subs" ] && [ -z "$missing" ]; check "every subcommand of fsdpx --help is offered (missing:$missing)" $?
for s in sample export-hf completion plan run compare; do
  grep -qx -- "$s" <<<"$subs"; check "fsdpx --help lists $s" $?
done
[ "$(complete_line fsdpx pl)" = plan ]; check "pl -> plan" $?
[ "$(complete_line fsdpx export-h)" = export-hf ]; check "export-h -> export-hf" $?
complete_line fsdpx plan --mo | grep -qx -- --model; check "plan --mo -> --model" $?
complete_line fsdpx sample --te | grep -qx -- --temperature; check "sample --te -> --temperature" $?
! complete_line fsdpx sample --te | grep -qx -- --tp; check "sample does not offer plan's options" $?
[ "$(complete_line fsdpx run --trace-r)" = --trace-ranks ]; check "run --trace-r -> --trace-ranks" $?
complete_line fsdpx compare --pr | grep -qx -- --profile; check "compare --pr -> --profile" $?
[ "$(complete_line fsdpx plan --model llama-ti)" = llama-tiny ]; check "--model llama-ti -> llama-tiny" $?
[ "$(complete_line fsdpx run --backend c | sort | tr '\n' ' ')" = "cpu cuda " ]; check "--backend c -> cpu cuda" $?
complete_line fsdpx --ver | grep -qx -- --version; check "--ver -> --version" $?
complete_line fsdpx report --sc | grep -qx -- --scaling; check "report --sc -> --scaling" $?
complete_line fsdpx report --tr | grep -qx -- --train-tokens; check "report --tr -> --train-tokens" $?
[ "$(complete_line fsdpx report --scaling s)" = strong ]; check "--scaling s -> strong" $?
[ "$(complete_line fsdpx plan --recompute sel | sort | tr '\n' ' ')" = "selective selective_op " ]
check "plan --recompute sel -> selective selective_op" $?
complete_line fsdpx plan --sh | grep -qx -- --sharding; check "plan --sh -> --sharding" $?
complete_line fsdpx estimate --sharding fsdp_ | grep -qx -- fsdp_full_shard; check "--sharding fsdp_ -> fsdp_full_shard" $?
for s in estimate simulate validate sample demo plan report export calibrate export-hf completion; do
  complete_line fsdpx "$s" - | grep -qx -- -o; check "$s offers -o" $?
done
complete_line fsdpx simulate --plan llama3.1-8b-dgx | grep -qx -- llama3.1-8b-dgx-h100-fsdp8; check "--plan completes plan names" $?

finish
