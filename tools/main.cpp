// tools/main.cpp — the fsdpx command: registers the subcommands, makes every numeric option strict
// (tools/cli_numbers.h), and is the one place that turns input errors into a one-line message and exit
// status 2, and a failed write of standard output (checked at the end: flush and close) into exit 1.
#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/json_reader.h"
#include "tools/cli_numbers.h"
#include "tools/commands.h"
#include "fsdpx_version.h"  // generated at build time (cmake/version.cmake)

namespace {

// The one line main prints: control characters escaped, at most 2,000 characters.
void print_error(const char* what) {
  std::fprintf(stderr, "fsdpx: error: %s\n", fsdpx::one_line(what, 2000).c_str());
}

// stdout is buffered: a full disk, a closed descriptor or an I/O error shows only when it is flushed and
// closed. Returns `status`, or 1 with a message when the output was not all written.
int finish_stdout(int status) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0 && !std::ferror(stdout);
  const int flush_errno = errno;
  const bool closed = std::fclose(stdout) == 0;
  if (flushed && closed) return status;
  const int err = !flushed ? flush_errno : errno;
  print_error(fmt::format("standard output: cannot write: {}", err != 0 ? std::strerror(err) : "write error").c_str());
  return status == 0 ? 1 : status;
}

int run(CLI::App& app, int argc, char** argv) {
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
  fsdpx::make_numbers_strict(app);
  return finish_stdout(run(app, argc, argv));
}
