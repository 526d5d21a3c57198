// tests/executor/launch_helper.cpp — a stand-in for `fsdpx run` under the local launcher: reads its
// rank from the environment, meets the other ranks through the rendezvous, receives rank 0's
// 128-byte id and gathers every rank's number, then writes what it saw to $OUT_DIR/rank<r>.txt.
// `launch_helper exit-before-join R` makes rank R exit with status 5 first (the others then wait in
// the rendezvous until the launcher stops them).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "executor/launch/launch_env.h"
#include "executor/launch/rendezvous.h"
#include "tests/executor/rendezvous_fixtures.h"

int main(int argc, char** argv) {
  try {
    const fsdpx::LaunchEnv env = fsdpx::detect_launch_env();
    if (argc == 3 && std::string(argv[1]) == "exit-before-join" && env.rank == std::atoi(argv[2]))
      return 5;
    fsdpx::Rendezvous rv = fsdpx::Rendezvous::join(fsdpx::test::options(
        env.master_port, env.rank, env.world_size, 5.0, env.master_addr));
    const bool id_ok = rv.broadcast(env.rank == 0 ? fsdpx::test::unique_id() : std::vector<std::uint8_t>{}) ==
                       fsdpx::test::unique_id();
    const auto all = rv.exchange({std::uint8_t(env.rank)});
    bool exchange_ok = int(all.size()) == env.world_size;
    for (std::size_t r = 0; exchange_ok && r < all.size(); ++r)
      exchange_ok = all[r] == std::vector<std::uint8_t>{std::uint8_t(r)};
    std::ofstream(std::string(std::getenv("OUT_DIR")) + "/rank" + std::to_string(env.rank) + ".txt")
        << env.source << " rank " << env.rank << " of " << env.world_size << ": id "
        << (id_ok ? "ok" : "wrong") << ", exchange " << (exchange_ok ? "ok" : "wrong") << "\n";
    return id_ok && exchange_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "launch_helper: error: %s\n", e.what());
    return 1;
  }
}
