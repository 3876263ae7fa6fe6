#include <asio.hpp>
#include <cstdio>
int main(){
#ifdef _MT
puts("_MT");
#endif
#ifdef _POSIX_THREADS
puts("posix");
#endif
}
