// Boost.JSON compiled into the library (its documented header-only mode: src.hpp in one
// translation unit), so that neither the installed package nor the programs linked with it need a
// Boost library; the kernel cache files of detail/cache/ and the tools use it.
#include <boost/json/src.hpp>
