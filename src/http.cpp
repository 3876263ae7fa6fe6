#include <corows/http.hpp>
