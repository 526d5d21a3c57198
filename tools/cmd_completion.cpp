// tools/cmd_completion.cpp — `fsdpx completion bash|zsh|fish [-o FILE]`: prints (or writes whole) the
// shell's completion script generated from this very command line (tools/completion_scripts.h), with the shipped
// model, cluster and plan names as values of --model, --cluster and --plan, and the words of the enum
// options several commands share (--recompute, --sharding: the plan files' names). The build writes all three
// (tools/CMakeLists.txt) and `cmake --install` installs them where bash-completion, zsh and fish look.
#include <cstdio>
#include <memory>
#include <string>

#include "core/config_paths.h"
#include "tools/commands.h"
#include "tools/completion_scripts.h"
#include "core/output_file.h"

namespace fsdpx {

void setup_completion(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("completion", "Print a shell completion script (bash, zsh or fish)");
  auto shell = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  sub->add_option("shell", *shell, "Shell: bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  sub->add_option("-o,--output", *out, "Write the script here instead of stdout");
  // The callback owns `shell` and `out`: the options write into them while the app parses (a `shell` left to
  // die with this function was written after it was freed; found by tests/fuzz/fuzz_cli.cpp).
  sub->callback([&app, out, shell] {
    const std::map<std::string, std::vector<std::string>> values{
        {"--model", list_configs("models")},
        {"--cluster", list_configs("clusters")},
        {"--backend", {"cpu", "cuda"}},
        {"--plan", list_configs("plans")},
        {"--recompute", {"none", "selective", "selective_op", "full"}},
        {"--sharding", {"fsdp_full_shard", "fsdp_shard_grad_op", "hsdp", "ddp", "zero1", "distributed_optimizer"}},
        {"--scaling", {"weak", "strong", "both"}},
    };
    const CompletionModel model = completion_model(app, values);
    const std::string script = *shell == "bash"  ? bash_completion_script(model)
                               : *shell == "zsh" ? zsh_completion_script(model)
                                                 : fish_completion_script(model);
    if (out->empty()) std::fputs(script.c_str(), stdout);
    else write_output_file(*out, script);
  });
}

}  // namespace fsdpx
