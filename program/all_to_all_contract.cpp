// program/all_to_all_contract.cpp — the bytes bound of a variable-count all-to-all (see
// all_to_all_contract.h).
#include "program/all_to_all_contract.h"

namespace fsdpx {

bool is_variable_all_to_all(const StepProgram& p, const SerialCollective& sc) {
  return sc.kind == Collective::all_to_all && sc.group >= 0 &&
         p.groups[std::size_t(sc.group)].kind == GroupKind::ep;
}

bool variable_all_to_all_within(double stated_bytes, int ranks, double issued_bytes) {
  constexpr double kSlack = 1e-9;  // the program's S is a double product; the issued one an integer count
  return ranks >= 1 && stated_bytes > 0 && issued_bytes >= stated_bytes / ranks * (1 - kSlack) &&
         issued_bytes <= stated_bytes * ranks * (1 + kSlack);
}

}  // namespace fsdpx
