// Boost.JSON compiled into spillway (header-only mode): Debian's libboost1.81-dev ships the
// headers but not the compiled library.
#include <boost/json/src.hpp>
