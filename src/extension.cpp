#include <corows/extension.hpp>
