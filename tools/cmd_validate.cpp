// tools/cmd_validate.cpp — `fsdpx validate [FILE | --cases FILE] [--format text|json]`: simulates every
// published run of a case file (format "fsdpx-published-runs/1") and prints predicted vs measured
// tokens/s/GPU, MFU and peak memory per case, then error statistics overall and per source.
#include <cctype>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/json_reader.h"
#include "core/output_file.h"
#include "simulator/interval_file.h"
#include "simulator/validate.h"
#include "tools/cli_names.h"
#include "tools/cmd_validate.h"
#include "tools/plan_file.h"
#include "tools/main_output.h"

namespace fsdpx {

namespace {

// A case id as a file name inside the folder: letters, digits, '-', '_' and '.' kept, anything else
// (a '/', "..", a control character) replaced by '_', never starting with '.'.
std::string case_file_name(const std::string& id) {
  std::string name = id.substr(0, 200);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') ch = '_';
  // A prefix by concatenation, not name.insert(0, "_"): g++ 12 -O3 warns falsely (-Wrestrict, GCC bug
  // 105329) on the inlined insert.
  const std::string prefix = name.empty() || name.front() == '.' ? "_" : "";
  return prefix + name + ".json";
}

// Writes only inside `dir`; two ids with the same file name are an error rather than one overwriting the other.
void write_case_plans(const ValidationCaseFile& cases, const std::string& dir) {
  std::map<std::string, std::string> id_of;  // file name -> case id
  for (const ValidationCase& c : cases.cases) {
    if (validation_skip_reason(c)) continue;
    const std::string name = case_file_name(c.id);
    if (const auto [it, fresh] = id_of.emplace(name, c.id); !fresh)
      throw_config_error(cases.file, "/cases", fmt::format("cases {} and {} would both be written as {}",
                                                           json_excerpt(it->second), json_excerpt(c.id), name));
    write_plan_file(dir + "/" + name, build_case_plan(c, cases.file).plan);
  }
}

}  // namespace

void run_validate(const ValidateOptions& o) {
  if (o.cases.empty() == o.positional.empty())
    throw ConfigError("validate: give the case file once, as FILE or --cases FILE");
  const ValidationCaseFile cases = load_validation_cases(o.cases.empty() ? o.positional : o.cases);
  const ValidationReport report = run_validation(cases);
  if (!o.write_plans.empty()) write_case_plans(cases, o.write_plans);
  if (!o.write_interval.empty())
    write_output_file(o.write_interval, interval_bands_json(interval_bands_from(report)).dump(2) + "\n");
  emit_main_output(o.out, o.format == OutputFormat::json ? validation_json(report).dump(2) + "\n"
                                                          : validation_text(report));
}

}  // namespace fsdpx
