// tools/completion_model.h — what a shell completion script needs from the CLI11 app, read from the app
// itself so that every script names exactly the subcommands and options fsdpx parses: per subcommand its
// description and options (long and short names, whether they take a value), and per option the words
// offered as its value. The writers per shell (completion_scripts.h) render it. Leaves out positional
// arguments and per-value checks.
#pragma once

#include <map>
#include <string>
#include <vector>

// Only the type is named here: the shell writers (completion_*.cpp) do not parse CLI11, whose every
// including unit pays several seconds of compile time (docs/performance.md).
namespace CLI {
class App;
}  // namespace CLI

namespace fsdpx {

struct CompletionOption {
  std::vector<std::string> long_names, short_names;  // without dashes
  bool takes_value = false;
  std::string help;
};

struct CompletionCommand {
  std::string name, help;
  std::vector<CompletionOption> options;
};

struct CompletionModel {
  std::vector<CompletionOption> top;         // the options before a subcommand (--help, --version)
  std::vector<CompletionCommand> commands;   // in the order the app lists them
  // For an option name ("--model"): the words offered as its value (file names are offered as well).
  std::map<std::string, std::vector<std::string>> value_words;
};

CompletionModel completion_model(const CLI::App& app, std::map<std::string, std::vector<std::string>> value_words);

// "--a --b -o" for `options`; `valued` gets the names that take a value.
std::vector<std::string> option_names(const std::vector<CompletionOption>& options, bool valued_only = false);

}  // namespace fsdpx
