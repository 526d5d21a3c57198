// tools/cmd_export.cpp — `fsdpx export --plan P --format torchtitan [-o job.toml]`: writes the plan as a
// torchtitan job config (planner/export_torchtitan.h) to a file or stdout. What the config cannot
// express is written as comments in the file and listed on stderr.
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/output_file.h"
#include "planner/export_torchtitan.h"
#include "tools/cli_options.h"
#include "tools/commands.h"

namespace fsdpx {

namespace {

enum class ExportFormat { torchtitan };
const std::map<std::string, ExportFormat> kExportFormats{{"torchtitan", ExportFormat::torchtitan}};

struct ExportOptions {
  std::string plan, out;
  ExportFormat format = ExportFormat::torchtitan;
};

void run_export(const ExportOptions& o) {
  const std::string path = resolve_config("plans", o.plan);
  const Plan plan = load_plan(path);
  const std::string description = "fsdpx plan " + std::filesystem::path(path).stem().string();
  const std::string toml = torchtitan_toml(plan, description);
  if (o.out.empty()) {
    std::fputs(toml.c_str(), stdout);
  } else {
    write_output_file(o.out, toml);
    std::printf("torchtitan job config written to %s\n", o.out.c_str());
  }
  for (const TorchtitanNote& n : torchtitan_settings(plan).notes)
    std::fprintf(stderr, "fsdpx export: not exact: %s: %s\n", n.key.c_str(), n.text.c_str());
}

}  // namespace

void setup_export(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* sub = app.add_subcommand("export", "Write a plan as another framework's config (torchtitan TOML)");
  sub->add_option("--plan", o->plan, "Plan JSON file (or a name under configs/plans)")->required();
  add_enum_option(sub, "--format", o->format, kExportFormats, "torchtitan")->required();
  sub->add_option("-o,--output", o->out, "Write to this file instead of stdout");
  sub->callback([o] { run_export(*o); });
}

}  // namespace fsdpx
