#include <corows/frame.hpp>
