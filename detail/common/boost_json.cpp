// Boost.JSON compiled into the library (its documented header-only mode: src.hpp in one
// translation unit), so that neither the installed package nor the programs linked with it need a
// Boost library; kernel_cache_json.cpp, kernel_cache_schema.cpp and the tools use it.
#include <boost/json/src.hpp>
