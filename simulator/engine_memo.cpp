// simulator/engine_memo.cpp — engine_key and EngineMemo (engine_memo.h).
#include "simulator/engine_memo.h"

#include <array>
#include <bit>

namespace fsdpx {

namespace {

std::uint64_t pack(std::int64_t a, std::int64_t b) {
  return std::uint64_t(std::uint32_t(a)) | std::uint64_t(std::uint32_t(b)) << 32;
}

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

void add_effects(std::vector<std::uint64_t>& k, const MemEffect* begin, const MemEffect* end) {
  k.push_back(std::uint64_t(end - begin));
  for (const MemEffect* e = begin; e != end; ++e) {
    k.push_back(std::uint64_t(e->category));
    k.push_back(bits(e->bytes));
  }
}

// Per op of a role: its stream list and position there (-1, -1 for an op no list holds: the engine
// rejects such a program, and its waits are kept as they are).
struct StreamPositions {
  std::vector<int> stream, position;
};

StreamPositions stream_positions(const RoleProgram& role) {
  StreamPositions sp{std::vector<int>(role.ops.size(), -1), std::vector<int>(role.ops.size(), -1)};
  for (std::size_t s = 0; s < role.streams.size(); ++s)
    for (std::size_t i = 0; i < role.streams[s].size(); ++i) {
      const int id = role.streams[s][i];
      if (id < 0 || id >= int(role.ops.size())) continue;
      sp.stream[std::size_t(id)] = int(s);
      sp.position[std::size_t(id)] = int(i);
    }
  return sp;
}

// The op's waits, the last one per stream list first (in list order), then any the lists do not order.
void add_deps(std::vector<std::uint64_t>& k, const Op& op, int id, const StreamPositions& sp, bool reduce) {
  std::array<int, kStreamCount> last{};
  last.fill(-1);
  std::vector<int> unordered;
  const int n = int(sp.stream.size());
  for (int d : op.deps) {
    const bool listed = d >= 0 && d < n && d != id && sp.stream[std::size_t(d)] >= 0;
    if (!reduce || !listed) {
      unordered.push_back(d);
      continue;
    }
    int& l = last[std::size_t(sp.stream[std::size_t(d)])];
    if (l < 0 || sp.position[std::size_t(l)] < sp.position[std::size_t(d)]) l = d;
  }
  std::size_t count = unordered.size();
  for (int l : last) count += l >= 0;
  k.push_back(count);
  for (int l : last)
    if (l >= 0) k.push_back(std::uint64_t(l));
  for (int d : unordered) k.push_back(std::uint64_t(std::uint32_t(d)) | std::uint64_t(1) << 32);
}

void add_role(std::vector<std::uint64_t>& k, const StepProgram& p, const RoleProgram& role, bool reduce) {
  k.push_back(pack(role.role_ranks, int(role.ops.size())));
  add_effects(k, role.resident.data(), role.resident.data() + role.resident.size());
  k.push_back(role.streams.size());
  for (const std::vector<int>& s : role.streams) {
    k.push_back(s.size());
    for (std::size_t i = 0; i < s.size(); i += 2) k.push_back(pack(s[i], i + 1 < s.size() ? s[i + 1] : -1));
  }
  const StreamPositions sp = stream_positions(role);
  for (int i = 0; i < int(role.ops.size()); ++i) {
    const Op& op = role.ops[std::size_t(i)];
    k.push_back(std::uint64_t(op.kind) | std::uint64_t(op.stream) << 8 | std::uint64_t(op.release_params) << 16);
    k.push_back(pack(op.group, op.rendezvous));
    for (double x : {op.duration_s, op.latency_s, op.serial_comm_time_s, op.nvlink_load, op.nic_load, op.sm_share})
      k.push_back(bits(x));
    if (op.release_params) k.push_back(bits(released_param_bytes(p, op)));
    add_deps(k, op, i, sp, reduce);
    add_effects(k, op.alloc_at_start.begin(), op.alloc_at_start.end());
    add_effects(k, op.free_at_end.begin(), op.free_at_end.end());
  }
}

// FNV-1a over the words, each mixed first (splitmix64's finaliser).
std::uint64_t hash_words(const std::vector<std::uint64_t>& k) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::uint64_t x : k) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    h = (h ^ x) * 1099511628211ull;
  }
  return h;
}

std::size_t result_bytes(const EngineResult& r) {
  return r.ops.size() * sizeof(OpTiming) + r.memory_samples.size() * sizeof(MemorySample) +
         r.peak_by_role.size() * sizeof(MemoryPeak) + r.compute_busy_ns.size() * sizeof(TimeNs) * (kOpKindCount + 1);
}

}  // namespace

std::vector<std::uint64_t> engine_key(const StepProgram& p, const EngineOptions& o) {
  std::vector<std::uint64_t> k;
  std::size_t ops = 0;
  for (const RoleProgram& role : p.roles) ops += role.ops.size();
  k.reserve(16 + ops * 14);
  k.push_back(std::uint64_t(o.overlap) | std::uint64_t(o.infinite_bandwidth) << 1 | std::uint64_t(o.expand_ranks) << 2 |
              std::uint64_t(o.interference) << 3 | std::uint64_t(o.record_ops) << 4);
  k.push_back(pack(p.mesh.dp_replicate, p.mesh.dp_shard));
  k.push_back(pack(p.mesh.cp, p.mesh.tp));
  k.push_back(p.groups.size());
  for (const ProcessGroup& g : p.groups) {
    k.push_back(pack(int(g.kind), g.reshard_ranks));
    k.push_back(pack(g.shape.ranks, g.shape.ranks_per_node));
  }
  k.push_back(p.rendezvous.size());
  for (const std::vector<OpRef>& r : p.rendezvous) {
    k.push_back(r.size());
    for (const OpRef& m : r) k.push_back(pack(m.role, m.op));
  }
  k.push_back(p.roles.size());
  // Without overlap the engine starts ops in issue order, not per stream list: waits are kept as they are.
  for (const RoleProgram& role : p.roles) add_role(k, p, role, o.overlap);
  return k;
}

EngineResult EngineMemo::run(const StepProgram& program, const EngineOptions& options) {
  EngineOptions plain = options;
  plain.memo = nullptr;
  std::vector<std::uint64_t> key = engine_key(program, plain);
  const std::uint64_t hash = hash_words(key);
  for (auto [it, end] = by_hash_.equal_range(hash); it != end; ++it)
    if (it->second->key == key) {
      ++hits_;
      entries_.splice(entries_.begin(), entries_, it->second);  // most recently used
      return it->second->result;
    }
  ++misses_;
  EngineResult result = run_engine(program, plain);
  key.shrink_to_fit();
  const std::size_t bytes = key.capacity() * sizeof(std::uint64_t) + result_bytes(result);
  if (bytes > budget_bytes_) return result;
  evict_to(budget_bytes_ - bytes);
  entries_.push_front(Entry{hash, std::move(key), result, bytes});
  by_hash_.emplace(hash, entries_.begin());
  held_bytes_ += bytes;
  return result;
}

void EngineMemo::evict_to(std::size_t budget_bytes) {
  while (held_bytes_ > budget_bytes && !entries_.empty()) {
    const auto last = std::prev(entries_.end());
    for (auto [it, end] = by_hash_.equal_range(last->hash); it != end; ++it)
      if (it->second == last) {
        by_hash_.erase(it);
        break;
      }
    held_bytes_ -= last->bytes;
    entries_.pop_back();
  }
}

}  // namespace fsdpx
