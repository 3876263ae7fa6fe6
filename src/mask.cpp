#include <corows/mask.hpp>
