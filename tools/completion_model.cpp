// tools/completion_model.cpp — reads the completion model off the CLI11 app (tools/completion_model.h).
#include "tools/completion_model.h"

#include <CLI/CLI.hpp>

namespace fsdpx {
namespace {

std::vector<CompletionOption> options_of(const CLI::App& app) {
  std::vector<CompletionOption> out;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_lnames().empty() && opt->get_snames().empty()) continue;  // positional
    out.push_back({opt->get_lnames(), opt->get_snames(), opt->get_type_size_max() > 0, opt->get_description()});
  }
  return out;
}

}  // namespace

CompletionModel completion_model(const CLI::App& app, std::map<std::string, std::vector<std::string>> value_words) {
  CompletionModel m;
  m.top = options_of(app);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    m.commands.push_back({sub->get_name(), sub->get_description(), options_of(*sub)});
  m.value_words = std::move(value_words);
  return m;
}

std::vector<std::string> option_names(const std::vector<CompletionOption>& options, bool valued_only) {
  std::vector<std::string> out;
  for (const CompletionOption& o : options) {
    if (valued_only && !o.takes_value) continue;
    for (const auto& n : o.long_names) out.push_back("--" + n);
    for (const auto& n : o.short_names) out.push_back("-" + n);
  }
  return out;
}

}  // namespace fsdpx
