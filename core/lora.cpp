// core/lora.cpp — LoRA settings: names, adapter shapes and counts, strict JSON (see lora.h). The adapter
// of W [out, in] is A [r, in] and B [out, r] (Hu et al. 2021, §4.1), so r (in + out) parameters.
#include "core/lora.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/json_reader.h"
#include "core/plan.h"

namespace fsdpx {

namespace {

// Ranks up to 65536 and alpha up to 1e6 cover every published setting (peft's default r = 8, alpha = 8;
// QLoRA r = 64, alpha = 16) with wide headroom; dropout is a probability below 1.
constexpr IntRange kLoraRank{1, 65536};
constexpr NumberRange kLoraAlpha{1e-6, 1e6};
constexpr NumberRange kLoraDropout{0.0, 0.999};
constexpr LoraTarget kAll[] = {LoraTarget::q,    LoraTarget::k,  LoraTarget::v,   LoraTarget::o,
                               LoraTarget::gate, LoraTarget::up, LoraTarget::down};

std::optional<LoraTarget> target_of(const std::string& name) {
  for (LoraTarget t : kAll)
    if (name == lora_target_name(t)) return t;
  return std::nullopt;
}

}  // namespace

const char* lora_target_name(LoraTarget t) {
  switch (t) {
    case LoraTarget::q: return "q";
    case LoraTarget::k: return "k";
    case LoraTarget::v: return "v";
    case LoraTarget::o: return "o";
    case LoraTarget::gate: return "gate";
    case LoraTarget::up: return "up";
    case LoraTarget::down: return "down";
  }
  return "?";
}

bool LoraSettings::has_target(LoraTarget t) const { return std::find(targets.begin(), targets.end(), t) != targets.end(); }

std::vector<LoraProjection> lora_projections(const ModelSpec& m, const LoraSettings& s) {
  std::vector<LoraProjection> out;
  for (LoraTarget t : s.targets) {
    switch (t) {
      case LoraTarget::q: out.push_back({t, m.hidden, m.q_dim()}); break;
      case LoraTarget::k:
      case LoraTarget::v: out.push_back({t, m.hidden, m.kv_dim()}); break;
      case LoraTarget::o: out.push_back({t, m.q_dim(), m.hidden}); break;
      case LoraTarget::gate:
      case LoraTarget::up: out.push_back({t, m.hidden, m.ffn_hidden}); break;
      case LoraTarget::down: out.push_back({t, m.ffn_hidden, m.hidden}); break;
    }
  }
  return out;
}

double lora_block_params(const ModelSpec& m, const LoraSettings& s) {
  double n = 0;
  for (const LoraProjection& p : lora_projections(m, s)) n += double(s.rank) * double(p.in + p.out);
  return n;
}

double lora_params(const ModelSpec& m, const LoraSettings& s) { return double(m.layers) * lora_block_params(m, s); }

std::vector<LoraTarget> parse_lora_targets(const std::string& list, const std::string& what) {
  std::vector<LoraTarget> out;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t end = std::min(list.find(',', begin), list.size());
    const std::string name = list.substr(begin, end - begin);
    const auto t = target_of(name);
    if (!t) throw ConfigError(fmt::format("{}: unknown LoRA target \"{}\" (expected q, k, v, o, gate, up, down)", what, name));
    if (std::find(out.begin(), out.end(), *t) != out.end())
      throw ConfigError(fmt::format("{}: LoRA target \"{}\" given twice", what, name));
    out.push_back(*t);
    begin = end + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}

LoraSettings parse_lora(JsonObject o, const ModelSpec& m) {
  LoraSettings s;
  s.rank = o.integer_in("rank", kLoraRank);
  s.alpha = o.number_in("alpha", kLoraAlpha);
  s.dropout = o.optional_number_in("dropout", kLoraDropout).value_or(0.0);
  s.targets.clear();
  const auto items = o.array("targets");
  if (items.empty()) o.fail("targets", "expected at least one of q, k, v, o, gate, up, down");
  for (const auto& [j, path] : items) {
    const auto t = j->is_string() ? target_of(j->get<std::string>()) : std::nullopt;
    if (!t) throw_config_error(o.file(), path, "expected one of q, k, v, o, gate, up, down");
    if (s.has_target(*t)) throw_config_error(o.file(), path, fmt::format("target \"{}\" given twice", lora_target_name(*t)));
    if (*t == LoraTarget::gate && m.ffn_kind != FfnKind::swiglu)
      throw_config_error(o.file(), path, "\"gate\" needs a gated MLP (ffn_kind swiglu)");
    s.targets.push_back(*t);
  }
  std::sort(s.targets.begin(), s.targets.end());
  o.finish();
  return s;
}

void validate_lora(const Plan& p, const std::string& file) {
  if (!p.lora) return;
  if (p.parallelism.tp > 1 || p.parallelism.pp > 1)
    throw_config_error(file, "/lora", fmt::format("LoRA runs with data and context parallelism only, not with tp = {} "
                                                  "and pp = {} (adapters on tensor or pipeline slices are not modelled)",
                                                  p.parallelism.tp, p.parallelism.pp));
}

nlohmann::json lora_to_json(const LoraSettings& s) {
  nlohmann::json targets = nlohmann::json::array();
  for (LoraTarget t : s.targets) targets.push_back(lora_target_name(t));
  nlohmann::json j{{"rank", s.rank}, {"alpha", s.alpha}, {"targets", targets}};
  if (s.dropout > 0) j["dropout"] = s.dropout;
  return j;
}

}  // namespace fsdpx
