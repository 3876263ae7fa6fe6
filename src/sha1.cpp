#include <corows/sha1.hpp>
