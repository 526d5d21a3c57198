// tools/completion_scripts.h — shell completion scripts for fsdpx, rendered from the completion model
// (completion_model.h): bash (`complete -F`), zsh (a `#compdef` function, autoloaded from fpath or
// sourced) and fish (`complete -c` lines). Each completes subcommands, each subcommand's options and,
// after an option that takes a value, its word list and file names. Leaves out positional arguments.
#pragma once

#include <string>

#include "tools/completion_model.h"

namespace fsdpx {

std::string bash_completion_script(const CompletionModel& m);
std::string zsh_completion_script(const CompletionModel& m);
std::string fish_completion_script(const CompletionModel& m);

}  // namespace fsdpx
