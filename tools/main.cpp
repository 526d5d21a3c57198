// tools/main.cpp — the fsdpx command: registers the subcommands and is the one place that turns
// input errors into a one-line message and exit status 2.
#include <csignal>
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/json_reader.h"
#include "tools/commands.h"
#include "fsdpx_version.h"  // generated at build time (cmake/version.cmake)

namespace {

// The one line main prints: control characters escaped, at most 2,000 characters.
void print_error(const char* what) {
  std::fprintf(stderr, "fsdpx: error: %s\n", fsdpx::one_line(what, 2000).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // Past the file-size limit (ulimit -f) a write fails with EFBIG, reported like a full disk, instead of
  // the default SIGXFSZ killing fsdpx mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"fsdpx: plan, simulate and run fully sharded data-parallel training of LLMs"};
  app.set_version_flag("--version", fmt::format("fsdpx {} (git {}; CUDA backend {})", FSDPX_VERSION, FSDPX_GIT_REVISION,
                                                FSDPX_BUILT_WITH_CUDA ? "built in" : "not built"));
  app.require_subcommand(1);
  fsdpx::setup_demo(app);
  fsdpx::setup_estimate(app);
  fsdpx::setup_simulate(app);
  fsdpx::setup_explain_memory(app);
  fsdpx::setup_validate(app);
  fsdpx::setup_plan(app);
  fsdpx::setup_report(app);
  fsdpx::setup_export(app);
  fsdpx::setup_run(app);
  fsdpx::setup_calibrate(app);
  fsdpx::setup_compare(app);
  fsdpx::setup_sample(app);
  fsdpx::setup_export_hf(app);
  fsdpx::setup_completion(app);
  try {
    app.parse(argc, argv);
  } catch (const fsdpx::ExitWith& e) {
    return e.code;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(fmt::format("command line: {} (see fsdpx --help)", e.what()).c_str());
    return 2;
  } catch (const fsdpx::ConfigError& e) {
    print_error(e.what());
    return 2;
  } catch (const nlohmann::json::exception& e) {
    print_error(e.what());
    return 2;
  } catch (const std::exception& e) {  // a failure while running (fsdpx run: "rank r: ...", a write error)
    print_error(e.what());
    return 1;
  }
  return 0;
}
