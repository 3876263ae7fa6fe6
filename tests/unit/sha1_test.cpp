#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_SUITE(sha1)
BOOST_AUTO_TEST_CASE(pending) { BOOST_TEST_MESSAGE("pending"); }
BOOST_AUTO_TEST_SUITE_END()
