#include <corows/inflate_stream.hpp>
