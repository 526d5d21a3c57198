// tools/main_output.h — `-o FILE` of the commands whose main output is their report on stdout (estimate,
// simulate, validate, sample, demo): the same text or JSON, written whole to FILE instead
// (core/output_file.h). Commands whose main output is a file of its own (plan, report, export,
// calibrate, export-hf, completion) give -o that file.
#pragma once

#include <cstdio>
#include <string>

#include "core/output_file.h"

namespace fsdpx {

// Prints `text` on stdout, or writes it to `path` when -o gave one.
inline void emit_main_output(const std::string& path, const std::string& text) {
  if (path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  write_output_file(path, text);
}

}  // namespace fsdpx
