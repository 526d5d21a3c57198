// tests/fuzz/fuzz_cli.cpp — the fuzz test of the command line (issue 34): seeded mutations of one valid
// command line per fsdpx command (every subcommand of `fsdpx --help`), run as subprocesses. An edit replaces
// a flag's value by a hostile one (negative, 2^64, 1e23, nan, an exponent for an integer, octal and
// hexadecimal spellings, a subnormal, a 10,000-character string, /dev/urandom, a directory, a missing
// path), drops a flag, repeats one, adds an unknown one or a flag of another command. A case fails when
// fsdpx is killed by a signal (a crash), runs past kCaseTimeoutS (a hang), or exits with a status other
// than 0, 1 or 2. Deterministic: the seed and the case count fix every command line. Leaves out what the
// messages say (tests/tools/test_robust_cli.sh pins them) and the JSON inputs (fuzz_inputs.cpp).
// Usage: fuzz_cli FSDPX CONFIG_DIR DATA_DIR [SEED] [CASES].
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace {

constexpr int kCaseTimeoutS = 20;

using Args = std::vector<std::string>;

// One valid command line per command, small enough to finish in about a second.
std::vector<Args> base_lines(const std::string& configs, const std::string& data, const fs::path& out) {
  const std::string plan = configs + "/plans/llama-tiny-cpu-fsdp4.json";
  const std::string o = (out / "out").string();
  return {
      {"demo", "--format", "json"},
      {"estimate", "--model", "llama3.1-8b", "--cluster", "dgx-h100", "--nodes", "1", "--micro-batch", "1", "--seq",
       "4096", "--tp", "2", "--prefetch", "1"},
      {"simulate", "--plan", plan, "--format", "json"},
      {"validate", data + "/validation/tiny_cases.json", "--format", "json"},
      {"plan", "--model", "llama3.1-8b", "--cluster", "dgx-h100", "--nodes", "2", "--seq", "4096", "--global-batch",
       "64", "--top", "2", "-o", o},
      {"report", "--plan", plan, "--vary", "nodes=1,2", "-o", o},
      {"export", "--plan", configs + "/plans/llama3.1-8b-dgx-h100-fsdp8.json", "-o", o},
      {"run", "--plan", plan, "--steps", "2", "--seed", "3", "--threads", "1", "--format", "json"},
      {"calibrate", "--profile", (out / "absent-profile.json").string(), "-o", o},
      {"compare", "--plan", plan, "--profile", (out / "absent-trace.json").string(), "--top", "3"},
      {"sample", "--checkpoint", (out / "absent-checkpoint").string(), "--tokens", "5", "--temperature", "0.5"},
      {"export-hf", "--checkpoint", (out / "absent-checkpoint").string(), "-o", (out / "hf").string()},
      {"completion", "bash", "-o", o},
  };
}

class CliMutator {
 public:
  CliMutator(std::uint64_t seed, std::vector<std::string> flags, std::string dir)
      : rng_(seed), flags_(std::move(flags)), dir_(std::move(dir)) {}

  Args mutate(Args args) {
    const int edits = 1 + int(below(3));
    for (int e = 0; e < edits; ++e) edit(args);
    return args;
  }

 private:
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  std::string hostile() {
    static const std::vector<std::string> kValues{
        "-1", "0", "1", "2", "1e23", "1e20", "2^64", "18446744073709551616", "18446744073709551615",
        "9223372036854775808", "-9223372036854775809", "4294967296", "nan", "inf", "-inf", "0x10", "010", "1.5",
        "-0", "+3", " 4", "1e-320", "5e-324", "1e309", "", "abc", "1,2", "nodes=", "nodes=1e23", "-", "--",
        "/dev/urandom", "/dev/zero", "/dev/full", "/", "/proc/self/mem"};
    if (below(12) == 0) return std::string(10000, '9');
    if (below(10) == 0) return dir_;
    if (below(10) == 0) return dir_ + "/missing/file.json";
    return kValues[below(kValues.size())];
  }

  void edit(Args& a) {
    const std::size_t n = a.size();
    switch (below(5)) {
      case 0:  // a value (any argument after the command) replaced
      case 1:
        if (n > 1) a[1 + below(n - 1)] = hostile();
        break;
      case 2:  // an argument dropped
        if (n > 1) a.erase(a.begin() + std::ptrdiff_t(1 + below(n - 1)));
        break;
      case 3:  // an argument repeated
        if (n > 1) {
          const std::size_t i = 1 + below(n - 1);
          a.insert(a.begin() + std::ptrdiff_t(i), a[i]);
        }
        break;
      default:  // a flag of some command, or an unknown one, with a hostile value
        a.push_back(below(4) == 0 ? "--no-such-flag" : flags_[below(flags_.size())]);
        if (below(3) != 0) a.push_back(hostile());
    }
  }

  std::mt19937_64 rng_;
  std::vector<std::string> flags_;
  std::string dir_;
};

// Every "--flag" of the base lines: the flags the mutator adds anywhere.
std::vector<std::string> all_flags(const std::vector<Args>& lines) {
  std::vector<std::string> flags{"--processes", "--resume", "--checkpoint-dir", "--checkpoint-every", "--data",
                                 "--init-weights", "--comm-timeout", "--world-size", "--memory-limit",
                                 "--dp-shard", "--pp", "--micro-batch", "--grad-accum", "--lora-rank"};
  for (const Args& l : lines)
    for (const std::string& a : l)
      if (a.starts_with("--")) flags.push_back(a);
  return flags;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs one command line; "" when it ended with 0, 1 or 2 (set in `rc`) in time, else what happened.
std::string run_case(const std::string& fsdpx, const Args& args, const fs::path& dir, int& rc) {
  std::string cmd = fmt::format("cd {} && timeout -s KILL {} {}", shell_quote(dir.string()), kCaseTimeoutS,
                                shell_quote(fsdpx));
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  cmd += " </dev/null >/dev/null 2>" + shell_quote((dir / "stderr").string());
  const int status = std::system(cmd.c_str());
  if (!WIFEXITED(status)) return fmt::format("the shell ended with status {}", status);
  rc = WEXITSTATUS(status);
  if (rc == 137) return fmt::format("still running after {} s (a hang)", kCaseTimeoutS);
  if (rc > 128) return fmt::format("killed by signal {} (a crash)", rc - 128);
  if (rc > 2) return fmt::format("exit status {}", rc);
  return "";
}

std::string joined(const Args& a) {
  std::string s = "fsdpx";
  for (const std::string& x : a) s += " " + (x.size() > 60 ? x.substr(0, 20) + "...(" + std::to_string(x.size()) + " chars)" : x);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s FSDPX CONFIG_DIR DATA_DIR [SEED] [CASES]\n", argv[0]);
    return 2;
  }
  const std::string fsdpx = fs::absolute(argv[1]).string();
  const std::uint64_t seed = argc > 4 ? std::stoull(argv[4]) : 34;
  const int cases = argc > 5 ? std::stoi(argv[5]) : 110;
  const fs::path work = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  const fs::path dir = work / fmt::format("fsdpx-fuzz-cli-{}", ::getpid());
  fs::create_directories(dir);
  const std::vector<Args> lines = base_lines(fs::absolute(argv[2]).string(), fs::absolute(argv[3]).string(), dir);
  CliMutator mutator(seed, all_flags(lines), dir.string());
  int failures = 0, by_status[3] = {0, 0, 0};
  double slowest_s = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < cases; ++i) {
    const Args args = i < int(lines.size()) ? lines[std::size_t(i)] : mutator.mutate(lines[std::size_t(i) % lines.size()]);
    const auto t0 = std::chrono::steady_clock::now();
    int rc = -1;
    const std::string problem = run_case(fsdpx, args, dir, rc);
    if (problem.empty()) ++by_status[rc];
    slowest_s = std::max(slowest_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!problem.empty()) {
      ++failures;
      std::printf("FAIL case %d: %s: %s\n", i, joined(args).c_str(), problem.c_str());
    }
  }
  fs::remove_all(dir);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fuzz_cli seed %llu: %d command lines (%zu commands; exit 0: %d, 1: %d, 2: %d) in %.1f s, slowest "
              "%.2f s: %d failures\n",
              static_cast<unsigned long long>(seed), cases, lines.size(), by_status[0], by_status[1], by_status[2],
              took_s, slowest_s, failures);
  return failures == 0 ? 0 : 1;
}
