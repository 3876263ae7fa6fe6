#include <corows/handshake.hpp>
