#include <corows/base64.hpp>
