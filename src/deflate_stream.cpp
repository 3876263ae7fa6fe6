#include <corows/deflate_stream.hpp>
