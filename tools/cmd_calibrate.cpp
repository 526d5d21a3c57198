// tools/cmd_calibrate.cpp — placeholder while being written.
#include "tools/commands.h"
namespace fsdpx {
void setup_calibrate(CLI::App&) {}
}  // namespace fsdpx
