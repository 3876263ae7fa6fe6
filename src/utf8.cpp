#include <corows/utf8.hpp>
