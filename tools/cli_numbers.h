// tools/cli_numbers.h — the one parser every command's numeric options go through. CLI11 2.1 converts
// integers with strtoull/strtoll and no range check ("-1" and 2^64 become 2^64 - 1 for an unsigned
// option) and reads "010" as octal; make_numbers_strict adds, to every option whose type is an integer
// or a float, a check of the text first: integers are decimal digits (a '-' only for signed options, no
// exponent, fraction, leading zero or sign '+') that fit 64 bits; floats are finite, normal or zero, and
// consumed whole. A narrower target (int) is then range-checked by CLI11's own round-trip test.
// Leaves out per-option ranges: cli_range() adds those from core/input_ranges.h.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "core/input_ranges.h"

namespace fsdpx {

// "" when `text` is a valid integer (signed or unsigned) for a 64-bit option, else why not.
std::string check_integer_text(const std::string& text, bool is_signed);
// "" when `text` is a finite decimal number (no hexadecimal, inf, nan, subnormal), else why not.
std::string check_float_text(const std::string& text);

// Walks `app` and its subcommands (after every setup_* call) and adds the checks above to each option
// whose CLI11 type name is INT, UINT or FLOAT. Returns how many options it made strict.
int make_numbers_strict(CLI::App& app);

// A validator for an integer option within `range` (the same table the file readers use).
CLI::Validator cli_range(IntRange range);

}  // namespace fsdpx
