// tests/fuzz/fuzz_inputs.cpp — the fuzz test of every input kind (issue 15): seeded mutations
// (json_mutator.h) of the shipped models, Hugging Face configs, GPUs, clusters, plans, a validation case
// file, a checkpoint's manifest and shard file and a safetensors file are fed to the loaders in this
// process, and what loads goes on through the cost models, the simulator and the exporters. A case fails
// when anything but a ConfigError escapes, when a message does not start with the file and a JSON path
// or is not one short line, when a loaded plan does not round-trip, or when a case runs longer than
// kSlowCaseS; a crash prints the case and leaves its input in fuzz_crash_input. Deterministic: the seed
// and the case counts fix every input. With FSDPX, a few cases of each kind also run through the command
// line (estimate, plan, simulate, export, validate) in a subprocess.
// Usage: fuzz_inputs CONFIG_DIR DATA_DIR [SEED] [SCALE] [FSDPX].
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/json_reader.h"

#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/json_mutator.h"

namespace fs = std::filesystem;
using fsdpx::fuzz::JsonMutator;
using fsdpx::fuzz::Target;

namespace {

constexpr double kSlowCaseS = 5.0;

// What the crash handler prints and saves (async-signal-safe: preformatted, written with write(2)).
char g_case[512];
const std::string* g_input = nullptr;

void on_crash(int sig) {
  ::write(STDERR_FILENO, g_case, std::strlen(g_case));
  if (g_input != nullptr) {
    const int fd = ::open("fuzz_crash_input", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::write(fd, g_input->data(), g_input->size());
      ::close(fd);
    }
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs the target's command lines on `input` written to a file. A command must succeed or exit 2 with one
// line naming that file and a JSON path, a command-line option, or that no plan fits for that file; "" or
// what it did.
std::string run_cli(const std::string& fsdpx, const Target& t, const std::string& input, const fs::path& dir, int i) {
  const fs::path file = dir / fmt::format("{}-{}.json", t.name, i);
  std::ofstream(file, std::ios::binary) << input;
  for (const auto& args : t.cli) {
    std::string cmd = "timeout 120 " + fsdpx;
    for (const std::string& a : args) cmd += " '" + (a == "{}" ? file.string() : a) + "'";
    cmd += " >/dev/null 2>" + (dir / "stderr").string();
    const int status = std::system(cmd.c_str());
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const std::string err = slurp(dir / "stderr");
    if (rc == 0) continue;
    // The file's JSON path, its context length against --seq, a flag, or no plan fits naming the file.
    const std::string named_file = "fsdpx: error: " + file.string() + ": ";
    const bool named = err.starts_with(named_file + "/") || err.starts_with(named_file + "max_seq: ") ||
                       err.starts_with("fsdpx: error: command line: --") ||
                       (err.starts_with("fsdpx: error: no plan fits") && err.find(file.string()) != std::string::npos);
    if (rc != 2 || !named || std::count(err.begin(), err.end(), '\n') != 1)
      return fmt::format("fsdpx {} exited {}: {}", args[0], rc, fsdpx::one_line(err, 300));
  }
  return "";
}

struct Totals {
  int cases = 0, loaded = 0, rejected = 0, failures = 0;
  double slowest_s = 0;
};

// Where and how often the command line runs: fsdpx's path ("" for never), cases per target.
struct CliRuns {
  std::string fsdpx;
  fs::path dir;
  int per_target = 6;
};

// Runs `cases` mutations of each seed in turn through `target` (and a few through fsdpx).
void fuzz_target(const Target& target, int cases, JsonMutator& mutator, const CliRuns& cli, Totals& totals) {
  const int cli_every = target.cli.empty() || cli.fsdpx.empty() ? 0 : std::max(1, cases / cli.per_target);
  Totals t;
  for (int i = 0; i < cases; ++i) {
    const fsdpx::fuzz::Seed& seed = target.seeds[std::size_t(i) % target.seeds.size()];
    const std::string input =
        target.binary ? mutator.mutate_bytes(seed.text) : mutator.mutate(seed.json, seed.text);
    std::snprintf(g_case, sizeof g_case, "fuzz_inputs: CRASH in %s case %d (seed %s): %.300s\n", target.name.c_str(),
                  i, seed.name.c_str(), mutator.description().c_str());
    g_input = &input;
    const auto start = std::chrono::steady_clock::now();
    std::string problem = target.run(input, seed);
    const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (cli_every > 0 && i % cli_every == cli_every - 1 && (problem == fsdpx::fuzz::kLoaded ||
                                                            problem == fsdpx::fuzz::kRejected))
      if (std::string p = run_cli(cli.fsdpx, target, input, cli.dir, i); !p.empty()) problem = p;
    t.slowest_s = std::max(t.slowest_s, took_s);
    ++t.cases;
    const bool slow = took_s > kSlowCaseS;
    if (problem == fsdpx::fuzz::kLoaded) ++t.loaded;
    else if (problem == fsdpx::fuzz::kRejected) ++t.rejected;
    if (slow || (problem != fsdpx::fuzz::kLoaded && problem != fsdpx::fuzz::kRejected)) {
      ++t.failures;
      std::printf("FAIL %s case %d (seed %s; %s): %s\n", target.name.c_str(), i, seed.name.c_str(),
                  mutator.description().c_str(),
                  slow ? fmt::format("took {:.1f} s", took_s).c_str() : problem.c_str());
    }
  }
  g_input = nullptr;
  std::printf("%-12s %5d cases: %5d loaded, %5d rejected, %d failures; slowest case %.2f s\n", target.name.c_str(),
              t.cases, t.loaded, t.rejected, t.failures, t.slowest_s);
  totals.cases += t.cases, totals.loaded += t.loaded, totals.rejected += t.rejected, totals.failures += t.failures;
  totals.slowest_s = std::max(totals.slowest_s, t.slowest_s);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CONFIG_DIR DATA_DIR [SEED] [SCALE] [FSDPX]\n", argv[0]);
    return 2;
  }
  const std::uint64_t seed = argc > 3 ? std::stoull(argv[3]) : 15;
  const double scale = argc > 4 ? std::stod(argv[4]) : 1.0;
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL}) std::signal(sig, on_crash);
  std::signal(SIGXFSZ, SIG_IGN);
  const fs::path work = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  const fs::path scratch = work / fmt::format("fsdpx-fuzz-{}", ::getpid());
  fs::create_directories(scratch);
  const CliRuns cli{argc > 5 ? argv[5] : "", scratch / "cli"};
  fs::create_directories(cli.dir);
  JsonMutator mutator(seed);
  Totals totals;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [target, cases] : fsdpx::fuzz::all_targets(argv[1], argv[2], scratch))
    fuzz_target(target, int(cases * scale), mutator, cli, totals);
  fs::remove_all(scratch);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fuzz_inputs seed %llu: %d cases (%d loaded, %d rejected) in %.1f s, slowest %.2f s: %d failures\n",
              static_cast<unsigned long long>(seed), totals.cases, totals.loaded, totals.rejected, took_s,
              totals.slowest_s, totals.failures);
  return totals.failures == 0 ? 0 : 1;
}
