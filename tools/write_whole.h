// tools/write_whole.h — writes a command's output file whole or not at all (write_file_whole: a temporary
// name beside it, written and fsynced, then renamed over the target; POSIX rename is atomic).
#pragma once

#include "executor/checkpoint/shard_file.h"
