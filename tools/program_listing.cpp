// tools/program_listing.cpp — the text of `fsdpx simulate --program` (see program_listing.h).
#include "tools/program_listing.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"

namespace fsdpx {

namespace {

std::string group_text(const StepProgram& p, const Op& op) {
  if (op.group < 0) return "-";
  const ProcessGroup& g = p.groups[std::size_t(op.group)];
  return fmt::format("{}[{}]", group_kind_name(g.kind), g.shape.ranks);
}

std::string bytes_text(double bytes) {
  if (bytes <= 0) return "-";
  if (bytes >= 1024.0 * 1024.0) return fmt::format("{:.2f}MiB", bytes / (1024.0 * 1024.0));
  if (bytes >= 1024.0) return fmt::format("{:.1f}KiB", bytes / 1024.0);
  return fmt::format("{:.0f}B", bytes);
}

// The op's effects on the training state (step_program.h): released parameters, FSDP2's kept copy,
// a completed reduction, the rendezvous it meets.
std::string effects_text(const Op& op) {
  std::vector<std::string> parts;
  if (op.payload != Payload::none) parts.emplace_back(payload_name(op.payload));
  if (op.release_params) parts.emplace_back("release");
  if (op.kept_shard_ranks > 1) parts.push_back(fmt::format("kept/{}", op.kept_shard_ranks));
  if (op.completes_reduction) parts.emplace_back("reduced");
  if (op.rendezvous >= 0) parts.push_back(fmt::format("rv{}", op.rendezvous));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ","));
}

std::string deps_text(const Op& op) { return op.deps.empty() ? "-" : fmt::format("{}", fmt::join(op.deps, ",")); }

std::string index_text(int i) { return i < 0 ? "-" : std::to_string(i); }

}  // namespace

std::string program_listing(const StepProgram& program, int role) {
  if (role < 0 || role >= int(program.roles.size()))
    throw ConfigError(fmt::format("--role: the program has pipeline ranks 0..{} (got {})",
                                  int(program.roles.size()) - 1, role));
  const RoleProgram& r = program.roles[std::size_t(role)];
  std::string out = fmt::format("role {} of {} ({} ranks each), {} ops in issue order\n", role, program.roles.size(),
                                r.role_ranks, r.ops.size());
  out += fmt::format("{:>5}  {:<16} {:<15} {:<22} {:>4} {:>3}  {:<16} {:>10}  {:<28} {:<12} {:>10}\n", "id", "stream",
                     "kind", "name", "unit", "mb", "group", "bytes", "effects", "deps", "time_ms");
  for (std::size_t id = 0; id < r.ops.size(); ++id) {
    const Op& op = r.ops[id];
    out += fmt::format("{:>5}  {:<16} {:<15} {:<22} {:>4} {:>3}  {:<16} {:>10}  {:<28} {:<12} {:>10.3f}\n", id,
                       stream_name(op.stream), op_kind_name(op.kind), op.name, index_text(op.unit),
                       index_text(op.micro_batch), group_text(program, op), bytes_text(op.comm_bytes),
                       effects_text(op), deps_text(op), op.duration_s * 1e3);
  }
  return out;
}

}  // namespace fsdpx
