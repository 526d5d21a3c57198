// tools/exit_with.h — how a command that is done asks fsdpx to exit with a status of its own (the local
// launcher passes on the status of its first failing rank); tools/main.cpp returns it without a message.
// Kept apart from tools/commands.h so that commands throw it without including CLI11.
#pragma once

namespace fsdpx {

struct ExitWith {
  int code = 0;
};

}  // namespace fsdpx
