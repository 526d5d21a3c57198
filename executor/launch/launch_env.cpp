// executor/launch/launch_env.cpp — detection of the launcher's rank variables (see launch_env.h for
// the precedence). Every value is parsed strictly (digits only, in range) and checked against the
// others, so a wrong export fails at start with the variable names instead of hanging a rendezvous.
#include "executor/launch/launch_env.h"

#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {
namespace {

// The four variables of one launcher, and how to tell a user to set MASTER_ADDR there.
struct LauncherVars {
  const char* source;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;  // nullptr for Slurm (derived from the tasks-per-node variables)
  const char* master_hint;
};

constexpr LauncherVars kTorchrun{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                 "export MASTER_ADDR=<rank 0's host> (torchrun sets it)"};
constexpr LauncherVars kOpenMpi{"open-mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                "pass it to every rank: mpirun -x MASTER_ADDR=<first host> ..."};
constexpr LauncherVars kMpich{"mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
                              "pass it to every rank: mpiexec -genv MASTER_ADDR <first host> ..."};
constexpr LauncherVars kSlurm{"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr,
                              "export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | "
                              "head -n1) before srun"};

class Reader {
 public:
  Reader(const EnvLookup& env, const char* source) : env_(env), source_(source) {}

  std::optional<std::string> get(const char* name) const {
    const char* v = env_(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  }
  bool has(const char* name) const { return env_(name) != nullptr; }

  // A required non-negative integer variable; `set_alongside` names a variable that is set (for the
  // message when this one is missing).
  int integer(const char* name, const char* set_alongside) const {
    const std::optional<std::string> text = get(name);
    if (!text)
      throw error(fmt::format("{} is not set ({} is)", name, set_alongside));
    return parse(name, *text);
  }

  int parse(const char* name, const std::string& text) const {
    const std::optional<int> value = to_int(text);
    if (!value) throw error(fmt::format("{}='{}' is not a non-negative integer", name, text));
    return *value;
  }

  static std::optional<int> to_int(std::string_view text) {
    int value = -1;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc() || ptr != end || value < 0) return std::nullopt;
    return value;
  }

  ConfigError error(const std::string& what) const {
    return ConfigError(fmt::format("{} launch environment: {}", source_, what));
  }

 private:
  const EnvLookup& env_;
  const char* source_;
};

// "8(x2),4" -> {8, 8, 4}: Slurm's compressed per-node task counts.
std::vector<int> parse_tasks_per_node(const Reader& r, const char* name, const std::string& text) {
  std::vector<int> counts;
  std::string_view rest = text;
  bool ok = !text.empty();
  while (ok && !rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    std::optional<int> repeat = 1;
    if (const std::size_t paren = item.find("(x"); paren != std::string_view::npos) {
      repeat = item.back() == ')' ? Reader::to_int(item.substr(paren + 2, item.size() - paren - 3))
                                  : std::nullopt;
      item = item.substr(0, paren);
    }
    const std::optional<int> count = Reader::to_int(item);
    ok = count && repeat && *count > 0 && *repeat > 0;
    if (ok) counts.insert(counts.end(), std::size_t(*repeat), *count);
  }
  if (!ok)
    throw r.error(fmt::format("{}='{}' is malformed (expected task counts like '8(x2),4')", name, text));
  return counts;
}

// The tasks on this node: SLURM_NTASKS_PER_NODE, else this node's entry of SLURM_TASKS_PER_NODE.
int slurm_local_size(const Reader& r, const char** used) {
  if (const auto n = r.get("SLURM_NTASKS_PER_NODE")) {
    *used = "SLURM_NTASKS_PER_NODE";
    return r.parse(*used, *n);
  }
  const auto list = r.get("SLURM_TASKS_PER_NODE");
  if (!list)
    throw r.error("SLURM_PROCID is set but neither SLURM_NTASKS_PER_NODE nor SLURM_TASKS_PER_NODE is");
  *used = "SLURM_TASKS_PER_NODE";
  const std::vector<int> counts = parse_tasks_per_node(r, *used, *list);
  bool uniform = true;
  for (int c : counts) uniform = uniform && c == counts.front();
  if (uniform) return counts.front();
  const auto node_text = r.get("SLURM_NODEID");
  if (!node_text)
    throw r.error(fmt::format("SLURM_TASKS_PER_NODE='{}' differs between nodes but SLURM_NODEID is not set",
                              *list));
  const int node = r.parse("SLURM_NODEID", *node_text);
  if (node >= int(counts.size()))
    throw r.error(fmt::format("SLURM_NODEID={} but SLURM_TASKS_PER_NODE='{}' lists {} nodes", node,
                              *list, counts.size()));
  return counts[std::size_t(node)];
}

void check_ranges(const Reader& r, const LauncherVars& v, const char* local_size_name,
                  const LaunchEnv& e) {
  if (e.world_size < 1) throw r.error(fmt::format("{}=0: the world size must be at least 1", v.size));
  if (e.rank >= e.world_size)
    throw r.error(fmt::format("{}={} but {}={} (ranks are 0..{})", v.rank, e.rank, v.size,
                              e.world_size, e.world_size - 1));
  if (e.local_world_size < 1)
    throw r.error(fmt::format("{}=0: a node runs at least 1 rank", local_size_name));
  if (e.local_world_size > e.world_size)
    throw r.error(fmt::format("{}={} but {}={} (a node cannot run more ranks than the job)",
                              local_size_name, e.local_world_size, v.size, e.world_size));
  if (e.local_rank >= e.local_world_size)
    throw r.error(fmt::format("{}={} but {}={} (local ranks are 0..{})", v.local_rank, e.local_rank,
                              local_size_name, e.local_world_size, e.local_world_size - 1));
}

int read_port(const Reader& r, const char* name, const std::string& text) {
  const int p = r.parse(name, text);
  if (p < 1 || p > 65535) throw r.error(fmt::format("{}={} is not a TCP port (1-65535)", name, p));
  return p;
}

// torchrun's agent on node 0 hosts its own TCPStore at MASTER_PORT when it tells its workers
// TORCHELASTIC_USE_AGENT_STORE=True, so fsdpx's rendezvous then takes the next port.
bool torchrun_agent_store(const Reader& r) {
  const auto v = r.get("TORCHELASTIC_USE_AGENT_STORE");
  return v && (*v == "True" || *v == "true" || *v == "1");
}

void read_master(const Reader& r, const LauncherVars& v, LaunchEnv& e) {
  if (const auto port = r.get("MASTER_PORT")) e.master_port = read_port(r, "MASTER_PORT", *port);
  if (const auto port = r.get("FSDPX_RDZV_PORT")) {
    e.master_port = read_port(r, "FSDPX_RDZV_PORT", *port);
  } else if (torchrun_agent_store(r)) {
    if (e.master_port == 65535)
      throw r.error(
          "MASTER_PORT=65535 is torchrun's agent store and 65536 is no port; set FSDPX_RDZV_PORT");
    e.master_port += 1;
  }
  const auto addr = r.get("MASTER_ADDR");
  if (addr && !addr->empty()) {
    e.master_addr = *addr;
  } else if (e.multi_node()) {
    throw r.error(fmt::format("MASTER_ADDR is not set, but the {} ranks span nodes ({} on this one); {}",
                              e.world_size, e.local_world_size, v.master_hint));
  } else {
    e.master_addr = "127.0.0.1";
  }
}

LaunchEnv read_launcher(const EnvLookup& env, const LauncherVars& v) {
  const char* launched = env("FSDPX_LAUNCHED");
  const bool fsdpx = std::string_view(v.source) == kTorchrun.source && launched != nullptr &&
                     std::string_view(launched) == "1";
  LaunchEnv e;
  e.source = fsdpx ? "fsdpx" : v.source;
  const Reader r(env, e.source.c_str());
  const char* present = r.has(v.rank) ? v.rank : v.size;
  e.rank = r.integer(v.rank, present);
  e.world_size = r.integer(v.size, present);
  e.local_rank = r.integer(v.local_rank, present);
  const char* local_size_name = v.local_size;
  e.local_world_size = v.local_size != nullptr ? r.integer(v.local_size, present)
                                               : slurm_local_size(r, &local_size_name);
  check_ranges(r, v, local_size_name, e);
  read_master(r, v, e);
  return e;
}

}  // namespace

LaunchEnv detect_launch_env(const EnvLookup& env) {
  if (env("RANK") != nullptr || env("WORLD_SIZE") != nullptr) return read_launcher(env, kTorchrun);
  if (env("OMPI_COMM_WORLD_RANK") != nullptr) return read_launcher(env, kOpenMpi);
  if (env("PMI_RANK") != nullptr && env("MPI_LOCALRANKID") != nullptr)
    return read_launcher(env, kMpich);
  if (env("SLURM_PROCID") != nullptr) return read_launcher(env, kSlurm);
  return LaunchEnv{};
}

LaunchEnv detect_launch_env() {
  return detect_launch_env([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

EnvLookup env_lookup(const std::map<std::string, std::string>& vars) {
  return [&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::string describe(const LaunchEnv& e) {
  if (!e.launched()) return "a single process (no launcher variables)";
  return fmt::format("rank {} of {} (local {} of {}) via {}, rendezvous at {}:{}", e.rank, e.world_size,
                     e.local_rank, e.local_world_size, e.source, e.master_addr, e.master_port);
}

std::string launch_job_id(const LaunchEnv& e) {
  return fmt::format("{}:{}:{}", e.master_addr, e.master_port, e.world_size);
}

}  // namespace fsdpx
