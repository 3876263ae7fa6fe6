#include <corows/permessage_deflate.hpp>
