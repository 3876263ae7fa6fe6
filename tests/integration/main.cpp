#define BOOST_TEST_MODULE corows
#include <boost/test/unit_test.hpp>
