// Forwards to detail/transport.hpp (the old file name) for impl/http.hpp and impl/handshake.hpp
// until the branch that reworks their body readers has landed.
#pragma once

#include <corows/detail/transport.hpp>
