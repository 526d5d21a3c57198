// tools/completion_bash.h — a bash completion script generated from the CLI11 app itself, so it names
// exactly the subcommands and options fsdpx parses. Leaves out other shells and per-option value
// checks: values complete from fixed word lists (shipped config names, enum values) or file names.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fsdpx {

// `value_words`: for an option name ("--model"), the words offered as its value; file names are offered
// as well for every option that takes a value.
std::string bash_completion_script(const CLI::App& app,
                                   const std::map<std::string, std::vector<std::string>>& value_words);

}  // namespace fsdpx
