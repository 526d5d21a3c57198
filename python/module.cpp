// python/module.cpp — fsdpx._fsdpx: runs one fsdpx subcommand (plan, estimate, simulate, validate,
// export) in-process through the setup functions the fsdpx binary registers (tools/commands.h) and its
// strict numbers (tools/cli_numbers.h), so options, checks, messages and JSON are the CLI's own; returns
// what the command printed. Input errors raise fsdpx.ConfigError with the line the CLI prints after
// "fsdpx: error: ". Leaves out the commands that train, calibrate or write reports (run the binary).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/errors.h"
#include "core/json_reader.h"
#include "planner/planner.h"
#include "python/stdout_capture.h"
#include "tools/cli_numbers.h"
#include "tools/commands.h"
#include "fsdpx_version.h"  // generated at build time (cmake/version.cmake)

namespace py = pybind11;

namespace fsdpx::python {

namespace {

// The subcommands of tools/main.cpp that compute a result without training or side files of their own.
void setup_commands(CLI::App& app) {
  app.require_subcommand(1);
  setup_estimate(app);
  setup_simulate(app);
  setup_validate(app);
  setup_plan(app);
  setup_export(app);
  make_numbers_strict(app);
}

// Parses `args` (without the program name) as tools/main.cpp does and runs the command. Input errors
// become ConfigError with main's one-line text; --help is not offered (the Python docstrings are).
void parse_and_run(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<const char*> argv{"fsdpx"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (const ConfigError&) {
    throw;
  } catch (const CLI::ParseError& e) {
    throw ConfigError(fmt::format("command line: {} (see fsdpx --help)", e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(one_line(e.what(), 2000));
  }
}

// Runs `fsdpx <args...>` and returns its standard output.
std::string run_command(const std::vector<std::string>& args) {
  CLI::App app{"fsdpx"};
  setup_commands(app);
  StdoutCapture capture;
  parse_and_run(app, args);
  return capture.take();
}

}  // namespace

}  // namespace fsdpx::python

PYBIND11_MODULE(_fsdpx, m) {
  m.doc() = "fsdpx's command-line subcommands run in-process (use the fsdpx package, not this module)";
  auto& config_error = py::register_exception<fsdpx::ConfigError>(m, "ConfigError", PyExc_ValueError);
  config_error.attr("__doc__") = "Invalid input: the line the fsdpx CLI prints (file and JSON path, or the option)";
  // Registered after ConfigError, so tried first: pybind11 tries translators newest first.
  auto& no_plan = py::register_exception<fsdpx::NoPlanFits>(m, "NoPlanFits", config_error.ptr());
  no_plan.attr("__doc__") = "No plan fits in memory; the message says what would";
  m.def("run_command", &fsdpx::python::run_command, py::arg("args"),
        "Runs `fsdpx ARGS...` (plan, estimate, simulate, validate, export) and returns its standard output");
  m.attr("version") = FSDPX_VERSION;
  m.attr("git_revision") = FSDPX_GIT_REVISION;
  m.attr("version_line") = fmt::format("fsdpx {} (git {}; CUDA backend {})", FSDPX_VERSION, FSDPX_GIT_REVISION,
                                       FSDPX_BUILT_WITH_CUDA ? "built in" : "not built");
}
